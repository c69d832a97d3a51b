/* devkernels.h: the worker's own device kernels (input init, poison fill, keyed digest, compare,
 * slack check, L2 reset), written as CUDA C in devkernels.c and compiled once at worker start with
 * NVRTC for the device's own architecture. Knows nothing of Lua. */
#ifndef KEVO_DEVKERNELS_H
#define KEVO_DEVKERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "cudrv.h"

/* Element types, numbered as recipe.h's kevo_dtype. */
enum {
  DK_F32,
  DK_F16,
  DK_BF16,
  DK_F64,
  DK_I32,
  DK_I64,
  DK_U8,
  DK_I8,
  DK_BOOL,
  DK_F8E4M3,
  DK_F8E5M2,
  DK_COUNT
};
/* Input distributions. */
enum { DK_NORMAL, DK_UNIFORM, DK_RANDINT };

typedef struct devk {
  CUmodule mod;
  CUfunction fill, pattern, compare, locate, guard, digest, l2_claim, l2_release, rate;
} devk;

/* What kv_compare finds, read back to the host. Counts are over the elements compared. */
typedef struct devk_stats {
  uint64_t mismatches, nans, unwritten, nondet;
  uint64_t first_unwritten, first_nondet; /* UINT64_MAX when none */
  uint32_t worst_key, pad;                /* float bits of the worst error / tolerance ratio */
  uint64_t worst_index;                   /* first index with that ratio; UINT64_MAX if n == 0 */
} devk_stats;

/* Compiles the kernels for sm_<major><minor> with NVRTC (no GPU needed): a malloc'd cubin. */
int devk_compile(int major, int minor, void **cubin, size_t *size, kevo_error *err);
/* Compiles and loads the kernels for compute capability major.minor. KEVO_E_CUDA on failure
 * (the NVRTC log in err). A context must be current. */
int devk_load(const cudrv *d, int major, int minor, devk *k, kevo_error *err);
void devk_unload(const cudrv *d, devk *k);

/* The launches return the CUresult of cuLaunchKernel; all run on stream s. */
/* p[i] = draw(key, i) for i < n, as dtype dt. a, b: mean/std (normal), bounds [a, b). */
CUresult devk_fill(const cudrv *d, const devk *k, CUstream s, CUdeviceptr p, uint64_t n, int dt,
                   uint64_t key, int kind, double a, double b);
/* Writes the 64-bit pattern over nbytes (a multiple of 8, p 8-aligned). */
CUresult devk_pattern(const cudrv *d, const devk *k, CUstream s, CUdeviceptr p, uint64_t nbytes,
                      uint64_t pattern);

/* Adds to *(u64 *)out a keyed, non-linear digest of nbytes (a multiple of 8): without the key,
 * no content can be chosen to match another's digest. The key is a kernel argument, so it
 * reaches the device only when this is launched (after the candidate's launch finished). */
CUresult devk_digest(const cudrv *d, const devk *k, CUstream s, CUdeviceptr p, uint64_t nbytes,
                     uint64_t key, CUdeviceptr out);
/* Resets the L2 with the buffer p (at least twice the L2): loads every line of it at evict_last
 * priority, so lines another kernel pinned with an evict_last policy are evicted, then demotes
 * them to evict_normal. sink: 8 bytes of device memory the loads may write. */
CUresult devk_l2_reset(const cudrv *d, const devk *k, CUstream s, CUdeviceptr p, uint64_t nbytes,
                       CUdeviceptr sink);
/* Adds to *(u64 *)out the number of bytes of p in [start, end) that differ from the pattern
 * devk_pattern wrote there (byte k holds byte k % 8 of the little-endian pattern). */
CUresult devk_guard(const cudrv *d, const devk *k, CUstream s, CUdeviceptr p, uint64_t start,
                    uint64_t end, uint64_t pattern, CUdeviceptr out);

/* Arithmetic-rate probes, one instruction kind each (kv_rate): f32 and f64 FMA on the FMA units,
 * then on the tensor cores (sm_80 and newer; mma.sync, the warp-level form) f16 and bf16
 * m16n8k16, TF32 m16n8k8, int8 m16n8k32 and f64 m8n8k4, all with f32/s32/f64 accumulators. */
enum {
  DK_RATE_F32_FMA,
  DK_RATE_F64_FMA,
  DK_RATE_F16_MMA,
  DK_RATE_BF16_MMA,
  DK_RATE_TF32_MMA,
  DK_RATE_S8_MMA,
  DK_RATE_F64_MMA,
  DK_RATE_KINDS
};
/* Launches kind's probe: blocks x 256 threads, iters loop iterations each; *flops: what the launch
 * computes (int8: operations). sink: 4 bytes of device memory it may write. */
CUresult devk_rate(const cudrv *d, const devk *k, CUstream s, int kind, int iters, unsigned blocks,
                   CUdeviceptr sink, double *flops);

typedef struct devk_cmp {
  CUdeviceptr actual;   /* second run's output (poisoned with pattern B before it) */
  CUdeviceptr snapshot; /* first run's output (poisoned with pattern A before it) */
  CUdeviceptr expected; /* the reference's output */
  uint64_t n;
  int dt;
  double atol, rtol;
  uint64_t poison_a, poison_b; /* the replicated patterns */
  CUdeviceptr stats;           /* device memory for one devk_stats */
} devk_cmp;
/* Both passes of the comparison, then copies the stats to *out (synchronizes s). */
CUresult devk_compare(const cudrv *d, const devk *k, CUstream s, const devk_cmp *c,
                      devk_stats *out);

#endif
