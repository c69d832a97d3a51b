/* gpueval_int.h: what the worker's gpu*.c files share: the device state, one evaluation's
 * state, and the functions each file offers the ones above it. Not a public header. */
#ifndef KEVO_GPUEVAL_INT_H
#define KEVO_GPUEVAL_INT_H

#include <stdint.h>

#include "cudrv.h"
#include "devkernels.h"
#include "gpucommon.h"
#include "nvml.h"
#include "proto.h"
#include "sha256.h"

enum {
  WK_MAX_TENSORS = KEVO_PROTO_MAX_TENSORS,
  WK_MAX_SCRATCH = 16,
  WK_MAX_KERNELS = KEVO_PROTO_MAX_KERNELS,
  WK_MAX_ARGS = KEVO_PROTO_MAX_ARGS,
  WK_MAX_MODULES = 16,
  WK_MAX_SHAPES = 64,
  WK_MAX_RANK = 8,
  WK_NAME = 128,
  /* a shape's buffer sets: the candidate's first runs rotate over sets 0..2 (the timing loop
   * then rotates over the three input sets they hold), its second runs use set 3 (other
   * buffers, other addresses), the reference runs on set 4, a pristine copy of the inputs */
  WK_SETS = 5,
  WK_ROTATE = 3,
  WK_SET_AGAIN = 3,
  WK_SET_REF = 4,
  WK_POOL = 48,
};

/* Allocations are rounded up to this, the driver's own granularity, and everything past a
 * tensor's last element is slack the worker fills and checks (docs/worker.md "Threat model"). */
#define WK_ALLOC_GRAIN ((size_t)2 << 20)

/* The reference outputs cache: host copies keyed by a hash of (reference cubins and plan,
 * tensors, shape, seed, trial), LRU, bounded in bytes. An entry holds either host copies of
 * the outputs or, for a reference process that keeps its outputs on the device (the PyTorch
 * bridge), one wk_ipc_ref per output: where to map them from, only while they are copied into
 * the reference set for a comparison. */
typedef struct wk_ipc_ref {
  CUipcMemHandle handle; /* of the allocation the output lives in (another process's) */
  uint64_t offset;       /* of the output in it */
  uint64_t bytes;
} wk_ipc_ref;
typedef struct wk_refcache wk_refcache;
wk_refcache *wk_refcache_new(size_t cap_bytes);
void wk_refcache_free(wk_refcache *c);
/* The stored outputs for key (one buffer per tensor: a host copy, or a wk_ipc_ref when *ipc is
 * set; NULL for inputs), or NULL. ipc may be NULL. */
void **wk_refcache_get(wk_refcache *c, const char key[KEVO_HASH_HEX], int *ipc);
/* Takes ownership of bufs[0..n) (malloc'd: host copies, or wk_ipc_ref when ipc) and their
 * total size (host bytes held). Entries past the cap are dropped, oldest first; an entry
 * larger than the cap is kept only until the next put. */
void wk_refcache_put(wk_refcache *c, const char key[KEVO_HASH_HEX], void **bufs, size_t n,
                     size_t bytes, int ipc);
/* A host buffer for the cache: page-locked when the driver gives it, else malloc'd; released
 * with wk_host_release(buf, g). */
void *wk_host_alloc(kevo_gpu *g, size_t bytes);
void wk_host_release(void *buf, void *ud);
/* Buffers are released with release(buf, ud) instead of free() once this is set. */
void wk_refcache_set_release(wk_refcache *c, void (*release)(void *buf, void *ud), void *ud);

struct kevo_gpu {
  cudrv drv;
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  devk dk;
  kevo_nvml *nvml;
  char name[256];
  char pci_bus[32]; /* names the physical GPU whatever CUDA_VISIBLE_DEVICES says */
  int cc_major, cc_minor, sms, clock_mhz, driver;
  size_t mem_bytes, l2_bytes;
  double copy_gbps, peak_tflops;
  double rate_tflops[DK_RATE_KINDS]; /* measured at start (gpudevice.c); 0: not measured */
  /* ms from kevo_gpu_open's start to: the device known, its context made, its kernels
   * compiled and loaded, the end (copy and rate probes) */
  double start_ms[4];
  CUdeviceptr flush; /* L2 flush buffer */
  size_t flush_bytes;
  unsigned flush_count;
  CUdeviceptr stats; /* one devk_stats, digest slots, a guard word */
  wk_refcache *refs;
  /* the inputs of the last `inputs` request with "share": "ipc", lent to the reference process
   * until the next request (wk_lent_release) */
  struct wk_shape *lent;
  /* device buffers freed by one evaluation, kept for the next (the same shapes come again and
   * again in a search: cuMemAlloc of a large buffer costs milliseconds) */
  struct {
    CUdeviceptr ptr;
    size_t bytes;
  } pool[WK_POOL];
  int npool;
  size_t pool_bytes;
};
/* Releases every pooled buffer (before the context goes, or when memory runs short). */
void wk_pool_drain(kevo_gpu *g);

typedef struct wk_tensor {
  char name[WK_NAME];
  int dt, output;
  int kind;    /* DK_NORMAL ... */
  double a, b; /* init parameters */
} wk_tensor;

typedef struct wk_buf {
  char name[WK_NAME];
  CUdeviceptr ptr;
  size_t bytes;   /* allocated, a multiple of 256 */
  uint64_t numel; /* tensors */
  int zero;       /* scratch: zero before each run of its plan */
} wk_buf;

typedef struct wk_arg {
  union {
    int32_t i32;
    int64_t i64;
    uint32_t u32;
    uint64_t u64;
    float f32;
    double f64;
    CUdeviceptr ptr;
  } v;
} wk_arg;

typedef struct wk_launch {
  CUfunction fn;
  char name[WK_NAME];
  unsigned grid[3], block[3], shared;
  int nargs;
  /* nargs each, in one allocation (wk_plan_release frees it): a KernelBench model passes
   * hundreds of tensors, and a plan has up to WK_MAX_KERNELS launches */
  short *tensor_arg; /* the tensor an arg points to (bound per set), or -1 */
  wk_arg *args;
  void **argp;
} wk_launch;

typedef struct wk_plan {
  int nk;
  wk_launch k[WK_MAX_KERNELS];
  int nscratch;
  wk_buf scratch[WK_MAX_SCRATCH];
  size_t scratch_used[WK_MAX_SCRATCH]; /* bytes asked for; the rest is slack, poisoned */
} wk_plan;

/* One set of a shape's tensors, and the keyed digests of what it holds once verified. */
typedef struct wk_set {
  wk_buf t[WK_MAX_TENSORS]; /* per request tensor */
  uint64_t in_digest;       /* its inputs (whole allocations) */
  uint64_t out_digest;      /* the candidate's verified outputs (whole allocations) */
  int verified;
} wk_set;

/* One shape, set up on the device: its buffer sets and both plans. */
typedef struct wk_shape {
  int index;
  const cJSON *spec; /* the request's shape object */
  char label[256];
  int held_out;
  int nstress; /* trials 0 .. nstress-1 draw inputs from the shape's stress inits */
  wk_set set[WK_SETS];
  uint64_t numel[WK_MAX_TENSORS];
  int rank[WK_MAX_TENSORS];
  int64_t dims[WK_MAX_TENSORS][WK_MAX_RANK];
  /* cand runs the candidate's runs and its timed reps; again the second run of trial 0, the
   * same plan over the candidate modules' twins (loaded again: their own __device__ state,
   * scratch of their own), so nothing the first run kept can serve it */
  wk_plan cand, again, ref;
} wk_shape;

/* The worst element found. */
typedef struct wk_worst {
  int have;
  char shape[256], tensor[WK_NAME];
  uint64_t flat;
  int rank;
  int64_t index[WK_MAX_RANK];
  double expected, actual, abs_err, rel_err;
  int expected_nan, actual_nan; /* printed as JSON strings: "nan" */
} wk_worst;

/* One evaluation: the request, what is loaded, and the result as it forms. */
typedef struct wk_eval {
  kevo_gpu *g;
  const cJSON *req;
  int ntensors;
  wk_tensor tensors[WK_MAX_TENSORS];
  int nmodules;
  CUmodule modules[WK_MAX_MODULES];
  int module_is_ref[WK_MAX_MODULES];
  CUmodule twins[WK_MAX_MODULES]; /* candidate modules loaded a second time, when first used */
  const kevo_blob *blobs;         /* the request's, for loading twins */
  int twin_offset;                /* the twins have run once more than the first modules */
  double twin_ms;                 /* wall time spent loading the twins */
  double shape_ms[WK_MAX_SHAPES]; /* wall time of each shape's set-up and verification */
  char ref_hash[KEVO_HASH_HEX];
  int trials;
  uint64_t seed;
  int seed_secret;       /* drawn here (getrandom): the request gave none */
  uint64_t key;          /* the digest key of this evaluation (getrandom), never in a request */
  int external;          /* reference outputs come from the cache only (put_reference), no plan */
  int no_modules;        /* inputs / put_reference: no modules, no plans */
  int no_plans;          /* profile: modules, but the shape's own plans are not read; set 0 only */
  const char *cur_stage; /* "verify" or "bench": where a CUDA failure is reported */
  /* result */
  const char *verdict, *stage;
  char message[2048];
  int crashed; /* the context is gone */
  int trials_done, shapes_done, stress_done, held_out_done;
  uint64_t mismatches;
  const char *flags[8];
  int nflags;
  wk_worst worst;
  uint32_t worst_key; /* its error / tolerance ratio, as float bits */
  double verify_ms;
  cJSON *bench;        /* the result's bench object once timed */
  cJSON *missing;      /* external reference outputs not cached: [{shape, label, trial}] */
  char sets_note[256]; /* why the benchmark shape has fewer input sets to time on, or "" */
} wk_eval;

/* Records the verdict (first one wins) and a one-line message; returns -1. */
int wk_fail(wk_eval *e, const char *verdict, const char *stage, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A CUDA failure in the worker's own work (not the candidate's launch): crash when sticky
 * (the context is gone), else "error". Returns -1. */
int wk_cuda_fail(wk_eval *e, CUresult r, const char *what);
/* Runs plan p on buffer set `set` (zeroes scratch asked for, launches each kernel in order,
 * its tensor arguments pointing into the set). A launch failure is judged: the candidate's ->
 * launch_error (crash when sticky), the reference's -> error. Does not synchronize. */
int wk_plan_run(wk_eval *e, wk_plan *p, int is_candidate, wk_set *set);
/* Synchronizes the stream after a plan; a failure is judged as wk_plan_run judges. */
int wk_plan_sync(wk_eval *e, int is_candidate, const char *what);
/* Fills every output of a set, slack included, with a pattern (wk_poison_a or wk_poison_b). */
int wk_poison_outputs(wk_eval *e, wk_set *set, const uint64_t *pattern);
/* Adds the keyed digest of the set's inputs (outputs: 1) over their whole allocations into
 * *(u64 *)slot. */
CUresult wk_digest_set(wk_eval *e, wk_set *set, int outputs, CUdeviceptr slot);
/* Copies set `from`'s inputs (whole allocations) into set `to`. */
int wk_copy_inputs(wk_eval *e, wk_shape *s, int from, int to);

int wk_verify_shape(wk_eval *e, wk_shape *s); /* gpuverify.c: all trials of one shape */
/* gpuverify.c: draws the inputs of (s, trial) into set `set` on the device, the slack past
 * each input's end filled with NaN (wk_pad_nan); the same in every request with the same seed,
 * shape label, tensor names and inits (the stress inits for trials below s->nstress). */
int wk_gen_inputs(wk_eval *e, wk_shape *s, int set, int trial);
/* gpuverify.c: the reference cache key of (s, trial): a hash of the reference modules, seed,
 * trial, shape label, tensors, numel and the shape's reference plan (or external key). Needs
 * only s->label and s->spec. */
void wk_ref_key(wk_eval *e, wk_shape *s, int trial, char out[KEVO_HASH_HEX]);
/* gpuextref.c: the inputs and put_reference ops, and the list of (shape, trial) pairs whose
 * external reference outputs are not cached (NULL when none is missing). */
cJSON *wk_missing_refs(wk_eval *e);
/* gpuextref.c: copies an IPC reference's outputs into set `to` (mapped for the copy only). */
int wk_ipc_fetch(wk_eval *e, wk_set *to, void **refs);
/* gpubench.c: times candidate (rotating over the verified sets) and reference (on its pristine
 * set) on shape s, checking every repetition's outputs and inputs against their digests. */
int wk_bench(wk_eval *e, wk_shape *s);
/* gpubench.c: the drift rule on the reference's interleaved times (n) and its times alone
 * (nalone), in ms: *drift is the relative slow-down of the medians, *ref_ms the time to take the
 * speed-up against; 1 when the drift is beyond the noise (then *ref_ms is the time alone). */
int wk_ref_drift(const double *inter, int n, const double *alone, int nalone, double *drift,
                 double *ref_ms);
/* gpuverify.c: whether a set's output slack (and the candidate plan's scratch slack) still
 * holds its poison after a run of that plan; -1 and the verdict when not. */
int wk_slack_intact(wk_eval *e, wk_shape *s, wk_set *set, const wk_plan *plan,
                    const uint64_t *pattern, const char *stage);

/* gpuplan.c: parses tensors and verify options, loads the modules. */
int wk_parse(wk_eval *e, const kevo_blob *blobs, size_t nblobs);
void wk_unload(wk_eval *e);
/* Allocates shape `index`'s tensors (nsets buffer sets: WK_SETS for the benchmark shape, else
 * the sets verification needs) and resolves both its plans. */
int wk_shape_setup(wk_eval *e, wk_shape *s, int index, int nsets);
/* The buffer sets the benchmark shape `index` gets for timing: WK_SETS when they fit in the
 * device memory free now (the pool's included, 1 GiB kept aside), else the three verification
 * needs (sets 0, 3 and 4: the timing loop then has one verified input set), with the figures
 * in e->sets_note. A problem of any size that fits three times is judged and timed. */
int wk_bench_sets(wk_eval *e, int index);
void wk_shape_teardown(wk_eval *e, wk_shape *s);
/* Resolves one plan of shape s (cand: 0 the reference's, 1 a candidate's from candidate modules
 * only, 2 the same over the candidate modules' twins): scratch buffers, functions,
 * shared-memory opt-in, arguments. */
int wk_plan_prepare(wk_eval *e, wk_shape *s, const cJSON *pj, wk_plan *p, int cand);
/* Frees what wk_plan_prepare allocated for p's launches (also after it failed half-way); p
 * must have started zeroed. wk_shape_teardown releases a shape's plans. */
void wk_plan_release(wk_plan *p);

#endif
