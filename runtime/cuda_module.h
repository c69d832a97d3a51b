/* cuda_module.h: a compiled CUDA module as plain data (the cubin, the compiler's log and
 * diagnostics, per-kernel resources), made by cuda_compile.c, kept by cuda_cache.c
 * (cuda_module.c). Knows nothing of Lua. */
#ifndef KEVO_CUDA_MODULE_H
#define KEVO_CUDA_MODULE_H

#include <stddef.h>

#include "sha256.h"

typedef struct cuda_diag {
  int line, col;     /* in the candidate's own source, 1-based; 0 when unknown */
  char severity[16]; /* "error" | "warning" | "note" */
  char *message;
} cuda_diag;

typedef struct cuda_kernel_info {
  char *name;                    /* entry name in the cubin (extern "C" name) */
  int registers;                 /* per thread; -1 when unknown */
  int shared_static;             /* bytes */
  int local_bytes;               /* stack frame */
  int spill_stores, spill_loads; /* bytes */
} cuda_kernel_info;

/* What the compiled code does that a fair timing must know about (found in its PTX, which
 * NVRTC gives beside the cubin): docs/worker.md "Threat model", class 11. */
enum {
  CUDA_ART_TIMER = 1u << 0,    /* reads %globaltimer or a clock register */
  CUDA_ART_SLEEP = 1u << 1,    /* nanosleep */
  CUDA_ART_MALLOC = 1u << 2,   /* device-side malloc/free */
  CUDA_ART_LAUNCH = 1u << 3,   /* device-side kernel launch */
  CUDA_ART_L2POLICY = 1u << 4, /* L2 eviction priorities, cache hints, discards */
  CUDA_ART_COUNT = 5
};
typedef struct cuda_module {
  int ok;                   /* compiled */
  char hash[KEVO_HASH_HEX]; /* content hash of (source, defines, arch, options, NVRTC version) */
  unsigned char *cubin;     /* NULL unless ok */
  size_t cubin_size;
  char *log; /* the compiler's log, capped */
  size_t ndiags;
  cuda_diag *diags;
  size_t nkernels;
  cuda_kernel_info *kernels;
  double compile_ms;  /* wall time of this call (near 0 on a cache hit) */
  int cached;         /* 1 memory cache, 2 disk cache */
  unsigned artifacts; /* CUDA_ART_* bits found in its PTX */
  char arch[16];
} cuda_module;

void cuda_module_free(cuda_module *m);
/* A deep copy, or NULL when out of memory. */
cuda_module *cuda_module_clone(const cuda_module *m);

#endif
