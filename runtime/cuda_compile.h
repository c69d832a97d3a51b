/* cuda_compile.h: compiling CUDA C candidates in process with NVRTC. Knows nothing of Lua.
 * Works without a GPU: the target architecture is given ("sm_90").
 *
 * Options given to NVRTC: -arch=<arch> -std=c++17 -default-device -Xptxas=-v (resources)
 * -I<toolkit include> (and its cccl/), -lineinfo when asked, -D<name>[=<value>] per define
 * (sorted by name), --pre-include=kevo_prelude.h. No --use_fast_math. Sources are untrusted
 * text: an #include of anything but a CUDA toolkit header (absolute paths, "..", files of the
 * working directory, computed includes) is refused as a compile error at its line, before
 * NVRTC runs; a host header (<torch/extension.h>, <vector>) is named as one.
 *
 * NVRTC has no C library. kevo gives it, in memory, the headers of runtime/cudashim (embedded
 * in the binary, part of the content hash): kevo_prelude.h, read before every source, holds
 * what nvcc's implicit includes give a .cu file (INFINITY, NAN, M_PI, INT_MAX, FLT_MAX, the
 * intN_t types, std::exp and the other std:: math names), and stand-ins for <cmath>, <math.h>,
 * <cfloat>, <float.h>, <climits>, <limits.h>, <cstdint>, <stdint.h>, <cstddef>, <stddef.h>,
 * <cstdio>, <stdio.h>, <cstdlib>, <stdlib.h>, <cstring>, <string.h>, <cassert>, <assert.h>,
 * <limits>, <type_traits>, <utility>, <algorithm> and <cub/cub.cuh> (the toolkit's pulls in
 * host code; this one holds the block, warp and thread collectives, and CUDA 12's cub::Sum,
 * Max and Min). The prelude costs about 10 ms a compile (its <cuda/std/climits>).
 *
 * Timeout: NVRTC runs on a thread of its own. It checks a cancel flag at the points where
 * NVRTC calls back (nvrtcSetFlowCallback: between phases and during code generation, not
 * inside the front end). The caller waits until the deadline (opts.timeout_s, else
 * $KEVO_COMPILE_TIMEOUT, else 60 s), then returns KEVO_E_TIMEOUT and leaves the thread to
 * end by itself (at the next callback, or when the front end finishes): its memory is freed
 * then. At most 4 such abandoned compiles may be alive; past that cuda_compile fails with
 * KEVO_E_TIMEOUT at once. A forked child per compile could be killed outright, but pays
 * NVRTC's start-up and a process spawn every time (bench/compile_latency.sh, 2-cpu build
 * machine: first compile of a process 28-107 ms against 30-65 ms warm), and a fork of a
 * process with threads may only exec; the thread keeps the warm path and the cache shared. */
#ifndef KEVO_CUDA_COMPILE_H
#define KEVO_CUDA_COMPILE_H

#include <stddef.h>

#include "cuda_module.h"
#include "status.h"

/* The most bytes of source the compiler takes; kevo eval refuses a larger kernel file as bad
 * input before anything runs. */
#define CUDA_MAX_SOURCE ((size_t)4 << 20)

/* KEVO_OK when arch is sm_NN or sm_NNN (optionally suffixed a or f) and this NVRTC supports
 * it; else KEVO_E_ARG with the message saying what is allowed ("sm_75 to sm_120"). For
 * commands that check --arch before any work starts. */
int cuda_check_arch(const char *arch, kevo_error *err);

typedef struct kevo_define {
  const char *name;
  const char *value; /* NULL for a bare -DNAME */
} kevo_define;

typedef struct cuda_compile_opts {
  const char *source;
  size_t len;
  const char *name; /* file name for diagnostics ("softmax.cu") */
  const char *arch; /* "sm_90"; NULL means the default (KEVO_ARCH env or sm_90) */
  const kevo_define *defines;
  size_t ndefines;
  int lineinfo;      /* add -lineinfo */
  double timeout_s;  /* 0: default */
  int no_cache;      /* 1: neither read nor write the compile cache (benchmarks) */
  double deadline_s; /* CLOCK_MONOTONIC seconds (kevo.clock's) by which the compile must end,
                        whatever timeout_s says (a run's --time); 0: none. Past it, a compile
                        not yet started fails at once with KEVO_E_TIMEOUT ("not started") */
} cuda_compile_opts;

/* "reads the global timer or a clock register", ... for bit 1 << i (CUDA_ART_*, cuda_module.h). */
const char *cuda_artifact_text(int i);
/* The CUDA_ART_* bits of a PTX text. */
unsigned cuda_scan_ptx(const char *ptx);

/* Compiles one source. Returns KEVO_OK with (*out)->ok set, or KEVO_E_COMPILE with *out
 * still filled (log, diags) so the caller can show them; other statuses mean no module. */
int cuda_compile(const cuda_compile_opts *opts, cuda_module **out, kevo_error *err);

/* Compiles n sources in a capped thread pool; out[i] and rcs[i] as cuda_compile gives them. */
void cuda_compile_many(const cuda_compile_opts *opts, size_t n, cuda_module **out, int *rcs,
                       kevo_error *errs);

/* How many compiles given up on (a timeout, kevo run's --time) still run on threads of their
 * own. NVRTC is not initialised to answer. */
int cuda_compile_abandoned(void);

/* Waits up to timeout_s for timed-out compiles still running in the background to end;
 * returns how many are left. Call before exiting to leave NVRTC idle. */
int cuda_compile_drain(double timeout_s);

/* Drops the in-memory compile cache (the disk cache stays). */
void cuda_cache_clear(void);

/* NVRTC's version, and the default architecture. */
void cuda_nvrtc_version(int *major, int *minor);
const char *cuda_default_arch(void);

#endif
