/* cudrv.h: the CUDA driver API, loaded at run time with dlopen("libcuda.so.1"). kevo never
 * links libcuda, so it starts and compiles on machines without a GPU; only the worker loads
 * this. Types come from the toolkit's cuda.h; each entry point is fetched with
 * cuGetProcAddress for the API version these headers describe, so `_v2` variants resolve right.
 * Knows nothing of Lua. */
#ifndef KEVO_CUDRV_H
#define KEVO_CUDRV_H

/* The toolkit's cuda.h (driver API types). */
#include <cuda.h>
#include <cudaProfiler.h> /* cuProfilerStart/Stop: what ncu profiles (gpuprofile.c) */
#ifndef CUDA_VERSION
#error "the CUDA toolkit's cuda.h was not found"
#endif

#include "status.h"

/* X(name): every driver function the worker calls. */
#define CUDRV_FUNCS(X)                                                                             \
  X(cuInit)                                                                                        \
  X(cuDriverGetVersion)                                                                            \
  X(cuDeviceGetCount)                                                                              \
  X(cuDeviceGet)                                                                                   \
  X(cuDeviceGetName)                                                                               \
  X(cuDeviceGetAttribute)                                                                          \
  X(cuDeviceTotalMem)                                                                              \
  X(cuDeviceGetPCIBusId)                                                                           \
  X(cuDevicePrimaryCtxRetain)                                                                      \
  X(cuDevicePrimaryCtxRelease)                                                                     \
  X(cuCtxSetCurrent)                                                                               \
  X(cuCtxSetLimit)                                                                                 \
  X(cuCtxGetLimit)                                                                                 \
  X(cuCtxSynchronize)                                                                              \
  X(cuCtxResetPersistingL2Cache)                                                                   \
  X(cuModuleLoadData)                                                                              \
  X(cuModuleUnload)                                                                                \
  X(cuModuleGetFunction)                                                                           \
  X(cuFuncSetAttribute)                                                                            \
  X(cuFuncGetAttribute)                                                                            \
  X(cuLaunchKernel)                                                                                \
  X(cuMemAlloc)                                                                                    \
  X(cuMemFree)                                                                                     \
  X(cuMemGetInfo)                                                                                  \
  X(cuMemcpyHtoD)                                                                                  \
  X(cuMemHostAlloc)                                                                                \
  X(cuMemFreeHost)                                                                                 \
  X(cuMemcpyDtoH)                                                                                  \
  X(cuMemcpyDtoDAsync)                                                                             \
  X(cuMemsetD8Async)                                                                               \
  X(cuMemsetD32Async)                                                                              \
  X(cuStreamCreate)                                                                                \
  X(cuStreamDestroy)                                                                               \
  X(cuStreamSynchronize)                                                                           \
  X(cuEventCreate)                                                                                 \
  X(cuEventDestroy)                                                                                \
  X(cuEventRecord)                                                                                 \
  X(cuEventSynchronize)                                                                            \
  X(cuEventElapsedTime)                                                                            \
  X(cuProfilerStart)                                                                               \
  X(cuProfilerStop)                                                                                \
  X(cuIpcGetMemHandle)                                                                             \
  X(cuIpcOpenMemHandle)                                                                            \
  X(cuIpcCloseMemHandle)                                                                           \
  X(cuGetErrorName)                                                                                \
  X(cuGetErrorString)

#define CUDRV_FIELD(name) __typeof__(&name) name;
typedef struct cudrv {
  void *lib;
  CUDRV_FUNCS(CUDRV_FIELD)
} cudrv;
#undef CUDRV_FIELD

/* Loads libcuda.so.1 and every entry point. KEVO_E_NOGPU (with the loader's reason) when the
 * library is missing; KEVO_E_CUDA when an entry point is. Does not call cuInit. */
int cudrv_load(cudrv *d, kevo_error *err);
void cudrv_unload(cudrv *d);

/* "CUDA_ERROR_ILLEGAL_ADDRESS" for r (never NULL), and its description. */
const char *cudrv_errname(const cudrv *d, CUresult r);
const char *cudrv_errstr(const cudrv *d, CUresult r);

/* 1 when r leaves the context unusable (illegal address, trap, misaligned access, ...): the
 * process must exit and a fresh one take over. */
int cudrv_is_sticky(CUresult r);

#endif
