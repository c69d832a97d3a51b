#include "nvml.h"

#include <dlfcn.h>
#include <stdlib.h>

/* NVML's C API as its header declares it; only what is used here, so the toolkit's nvml.h is
 * not needed. nvmlReturn_t is an int enum (0 success); a device is an opaque pointer. */
typedef void *nvml_device;
enum { NVML_OK = 0, NVML_CLOCK_SM = 1, NVML_TEMPERATURE_GPU = 0 };

struct kevo_nvml {
  void *lib;
  nvml_device dev;
  int (*shutdown)(void);
  int (*clock_info)(nvml_device, int, unsigned *);
  int (*max_clock_info)(nvml_device, int, unsigned *);
  int (*temperature)(nvml_device, int, unsigned *);
};

kevo_nvml *kevo_nvml_open(const char *busid) {
  void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return NULL;
  int (*init)(void) = (int (*)(void))dlsym(lib, "nvmlInit_v2");
  int (*by_bus)(const char *, nvml_device *) =
      (int (*)(const char *, nvml_device *))dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
  kevo_nvml *n = calloc(1, sizeof *n);
  if (!n || !init || !by_bus) goto fail;
  n->lib = lib;
  n->shutdown = (int (*)(void))dlsym(lib, "nvmlShutdown");
  n->clock_info = (int (*)(nvml_device, int, unsigned *))dlsym(lib, "nvmlDeviceGetClockInfo");
  n->max_clock_info =
      (int (*)(nvml_device, int, unsigned *))dlsym(lib, "nvmlDeviceGetMaxClockInfo");
  n->temperature = (int (*)(nvml_device, int, unsigned *))dlsym(lib, "nvmlDeviceGetTemperature");
  if (init() != NVML_OK) goto fail;
  if (by_bus(busid, &n->dev) != NVML_OK) {
    if (n->shutdown) n->shutdown();
    goto fail;
  }
  return n;
fail:
  free(n);
  dlclose(lib);
  return NULL;
}

static int read_u(kevo_nvml *n, int (*fn)(nvml_device, int, unsigned *), int what) {
  unsigned v = 0;
  if (!n || !fn || fn(n->dev, what, &v) != NVML_OK) return -1;
  return (int)v;
}

int kevo_nvml_sm_clock(kevo_nvml *n) {
  return read_u(n, n ? n->clock_info : NULL, NVML_CLOCK_SM);
}

int kevo_nvml_sm_clock_max(kevo_nvml *n) {
  return read_u(n, n ? n->max_clock_info : NULL, NVML_CLOCK_SM);
}

int kevo_nvml_temp(kevo_nvml *n) {
  return read_u(n, n ? n->temperature : NULL, NVML_TEMPERATURE_GPU);
}

void kevo_nvml_close(kevo_nvml *n) {
  if (!n) return;
  if (n->shutdown) n->shutdown();
  dlclose(n->lib);
  free(n);
}
