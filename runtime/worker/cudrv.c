#include "cudrv.h"

#include <dlfcn.h>
#include <string.h>

/* cuGetProcAddress as CUDA 12+ drivers export it (the _v2 form with a status out-argument). */
typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);

int cudrv_load(cudrv *d, kevo_error *err) {
  memset(d, 0, sizeof *d);
  d->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!d->lib) {
    const char *why = dlerror();
    return kevo_fail(err, KEVO_E_NOGPU, "no CUDA driver (libcuda.so.1): %s", why ? why : "?");
  }
  get_proc_fn get = (get_proc_fn)dlsym(d->lib, "cuGetProcAddress_v2");
  if (!get) {
    cudrv_unload(d);
    return kevo_fail(err, KEVO_E_NOGPU, "the CUDA driver is too old (no cuGetProcAddress_v2)");
  }
  CUdriverProcAddressQueryResult qr;
  void *p;
  /* #name is the plain API name ("cuMemAlloc"); the driver picks the variant of that API as of
   * CUDA_VERSION, which matches the prototype cuda.h gives the (macro-renamed) field. */
#define CUDRV_LOAD(name)                                                                           \
  p = NULL;                                                                                        \
  if (get(#name, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &qr) != CUDA_SUCCESS || !p) {      \
    cudrv_unload(d);                                                                               \
    return kevo_fail(err, KEVO_E_CUDA, "the CUDA driver lacks %s (query result %d)", #name,        \
                     (int)qr);                                                                     \
  }                                                                                                \
  memcpy(&d->name, &p, sizeof p);
  CUDRV_FUNCS(CUDRV_LOAD)
#undef CUDRV_LOAD
  return KEVO_OK;
}

void cudrv_unload(cudrv *d) {
  if (d->lib) dlclose(d->lib);
  memset(d, 0, sizeof *d);
}

const char *cudrv_errname(const cudrv *d, CUresult r) {
  const char *s = NULL;
  if (d && d->cuGetErrorName && d->cuGetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
  return "CUDA_ERROR_UNKNOWN_CODE";
}

const char *cudrv_errstr(const cudrv *d, CUresult r) {
  const char *s = NULL;
  if (d && d->cuGetErrorString && d->cuGetErrorString(r, &s) == CUDA_SUCCESS && s) return s;
  return "unknown CUDA error";
}

int cudrv_is_sticky(CUresult r) {
  switch (r) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_ECC_UNCORRECTABLE:
  case CUDA_ERROR_CONTEXT_IS_DESTROYED:
  case CUDA_ERROR_EXTERNAL_DEVICE:
  case CUDA_ERROR_UNKNOWN:
    return 1;
  default:
    return 0;
  }
}
