/* gpudevice.c: opening one device for the worker: the driver, the primary context and its limits,
 * the worker's own kernels, the L2 flush buffer, the copy bandwidth and the compute peak, NVML
 * and the reference cache; the "device" object of a hello reply. */
#include "gpudevice.h"
#include "gpueval_int.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define DRV (&g->drv)

static int gpu_check(kevo_gpu *g, CUresult r, const char *what, kevo_error *err) {
  if (r == CUDA_SUCCESS) return KEVO_OK;
  return kevo_fail(err, r == CUDA_ERROR_NO_DEVICE ? KEVO_E_NOGPU : KEVO_E_CUDA, "%s: %s: %s", what,
                   cudrv_errname(DRV, r), cudrv_errstr(DRV, r));
}

/* Median of n doubles (sorts them). */
static double median(double *v, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return n ? (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) : 0;
}

/* Device-to-device copy of a large buffer, timed with events: bytes read + bytes written over
 * the median time of several copies. */
static int measure_copy(kevo_gpu *g, kevo_error *err) {
  size_t bytes = (size_t)1 << 30;
  while (bytes > ((size_t)64 << 20) && bytes * 8 > g->mem_bytes)
    bytes >>= 1;
  CUdeviceptr a = 0, b = 0;
  CUevent e0 = NULL, e1 = NULL;
  double t[15];
  int n = 0, rc = gpu_check(g, DRV->cuMemAlloc(&a, bytes), "copy bandwidth buffer", err);
  if (!rc) rc = gpu_check(g, DRV->cuMemAlloc(&b, bytes), "copy bandwidth buffer", err);
  if (!rc) rc = gpu_check(g, DRV->cuEventCreate(&e0, CU_EVENT_DEFAULT), "cuEventCreate", err);
  if (!rc) rc = gpu_check(g, DRV->cuEventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate", err);
  if (!rc) rc = gpu_check(g, DRV->cuMemsetD8Async(a, 0x3c, bytes, g->stream), "memset", err);
  for (int i = 0; !rc && i < 18; i++) {
    CUresult r = DRV->cuEventRecord(e0, g->stream);
    if (!r) r = DRV->cuMemcpyDtoDAsync(b, a, bytes, g->stream);
    if (!r) r = DRV->cuEventRecord(e1, g->stream);
    if (!r) r = DRV->cuEventSynchronize(e1);
    float ms = 0;
    if (!r) r = DRV->cuEventElapsedTime(&ms, e0, e1);
    rc = gpu_check(g, r, "timing a device-to-device copy", err);
    if (!rc && i >= 3) t[n++] = ms; /* the first copies warm up */
  }
  if (!rc) g->copy_gbps = 2.0 * (double)bytes / (median(t, n) * 1e-3) / 1e9;
  if (e0) DRV->cuEventDestroy(e0);
  if (e1) DRV->cuEventDestroy(e1);
  if (a) DRV->cuMemFree(a);
  if (b) DRV->cuMemFree(b);
  return rc;
}

/* The arithmetic rates the chip reaches, measured once at worker start for its whole life: each
 * probe of devk_rate (FMA units, then the tensor cores' warp-level mma) runs on 4 blocks per SM,
 * its loop count scaled so a launch takes about 2 ms; the best of 3 timed launches after two
 * that size it. A probe the chip lacks (mma before sm_80) or that fails leaves 0. About 40 ms
 * in all (about 70 ms where a probe is slow). */
static void measure_rates(kevo_gpu *g) {
  CUevent e0 = NULL, e1 = NULL;
  if (DRV->cuEventCreate(&e0, CU_EVENT_DEFAULT) || DRV->cuEventCreate(&e1, CU_EVENT_DEFAULT))
    goto out;
  unsigned blocks = (unsigned)(g->sms > 0 ? 4 * g->sms : 64);
  for (int kind = 0; kind < DK_RATE_KINDS; kind++) {
    if (kind >= DK_RATE_F16_MMA && g->cc_major < 8) break;
    int iters = 64;
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
      double flops = 0;
      float ms = 0;
      CUresult r = DRV->cuEventRecord(e0, g->stream);
      if (!r) r = devk_rate(DRV, &g->dk, g->stream, kind, iters, blocks, g->stats + 240, &flops);
      if (!r) r = DRV->cuEventRecord(e1, g->stream);
      if (!r) r = DRV->cuEventSynchronize(e1);
      if (!r) r = DRV->cuEventElapsedTime(&ms, e0, e1);
      if (r || ms <= 0) break;
      if (rep < 2) { /* sizing, twice (the first is mostly launch overhead): ~2 ms a launch */
        double scaled = iters * 2.0 / ms;
        iters = scaled > 1 << 22 ? 1 << 22 : scaled < 64 ? 64 : (int)scaled;
        continue;
      }
      double tflops = flops / (ms * 1e-3) / 1e12;
      if (tflops > best) best = tflops;
    }
    g->rate_tflops[kind] = best;
  }
out:
  if (e0) DRV->cuEventDestroy(e0);
  if (e1) DRV->cuEventDestroy(e1);
}

static int attr(kevo_gpu *g, CUdevice_attribute a) {
  int v = 0;
  if (DRV->cuDeviceGetAttribute(&v, a, g->dev) != CUDA_SUCCESS) return 0;
  return v;
}

int kevo_gpu_open(int ordinal, int measure, kevo_gpu **out, kevo_error *err) {
  *out = NULL;
  kevo_gpu *g = calloc(1, sizeof *g);
  if (!g) return kevo_fail(err, KEVO_E_NOMEM, "no memory for the worker");
  double t0 = wk_now_ms();
  int rc = cudrv_load(DRV, err), count = 0;
  if (rc) goto fail;
  rc = gpu_check(g, DRV->cuInit(0), "cuInit", err);
  if (rc) {
    err->status = rc = KEVO_E_NOGPU; /* a driver with no usable device */
    goto fail;
  }
  if ((rc = gpu_check(g, DRV->cuDeviceGetCount(&count), "cuDeviceGetCount", err))) goto fail;
  if (ordinal < 0 || ordinal >= count) {
    rc = kevo_fail(err, KEVO_E_NOGPU, "no CUDA device %d (the driver sees %d)", ordinal, count);
    goto fail;
  }
  if ((rc = gpu_check(g, DRV->cuDeviceGet(&g->dev, ordinal), "cuDeviceGet", err))) goto fail;
  DRV->cuDriverGetVersion(&g->driver);
  DRV->cuDeviceGetName(g->name, sizeof g->name - 1, g->dev);
  DRV->cuDeviceTotalMem(&g->mem_bytes, g->dev);
  g->cc_major = attr(g, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  g->cc_minor = attr(g, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  g->sms = attr(g, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  g->l2_bytes = (size_t)attr(g, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  g->clock_mhz = attr(g, CU_DEVICE_ATTRIBUTE_CLOCK_RATE) / 1000;
  g->start_ms[0] = wk_now_ms() - t0;
  rc =
      gpu_check(g, DRV->cuDevicePrimaryCtxRetain(&g->ctx, g->dev), "cuDevicePrimaryCtxRetain", err);
  if (rc) goto fail;
  if ((rc = gpu_check(g, DRV->cuCtxSetCurrent(g->ctx), "cuCtxSetCurrent", err))) goto fail;
  /* Candidates' printf and malloc get small fixed budgets; the stack stays at its default. */
  rc = gpu_check(g, DRV->cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, (size_t)1 << 20),
                 "capping the printf FIFO", err);
  if (!rc)
    rc = gpu_check(g, DRV->cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, (size_t)8 << 20),
                   "capping the device malloc heap", err);
  if (!rc)
    rc = gpu_check(g, DRV->cuStreamCreate(&g->stream, CU_STREAM_DEFAULT), "cuStreamCreate", err);
  if (rc) goto fail;
  g->start_ms[1] = wk_now_ms() - t0;
  if ((rc = devk_load(DRV, g->cc_major, g->cc_minor, &g->dk, err))) goto fail;
  g->start_ms[2] = wk_now_ms() - t0;
  g->flush_bytes = 2 * g->l2_bytes;
  if (g->flush_bytes < ((size_t)64 << 20)) g->flush_bytes = (size_t)64 << 20;
  rc = gpu_check(g, DRV->cuMemAlloc(&g->flush, g->flush_bytes), "L2 flush buffer", err);
  if (!rc) rc = gpu_check(g, DRV->cuMemAlloc(&g->stats, 256), "stats buffer", err);
  if (!rc && measure) rc = measure_copy(g, err);
  if (rc) goto fail;
  if (measure) measure_rates(g);
  char bus[64] = "";
  if (DRV->cuDeviceGetPCIBusId(bus, sizeof bus, g->dev) == CUDA_SUCCESS) {
    g->nvml = kevo_nvml_open(bus);
    snprintf(g->pci_bus, sizeof g->pci_bus, "%s", bus);
  }
  int max_mhz = kevo_nvml_sm_clock_max(g->nvml);
  if (max_mhz > 0) g->clock_mhz = max_mhz;
  /* Hopper's dense FP8 tensor-core rate, 8192 FLOP per SM per clock: the highest arithmetic
   * rate the chip has, so flops / peak is a floor no candidate can beat (docs/worker.md). */
  g->peak_tflops = (double)g->sms * g->clock_mhz * 1e6 * 8192.0 / 1e12;
  const char *cap = getenv("KEVO_WORKER_REF_CACHE_MB");
  size_t cap_mb = cap && atol(cap) > 0 ? (size_t)atol(cap) : 6144;
  g->refs = wk_refcache_new(cap_mb << 20);
  if (!g->refs) {
    rc = kevo_fail(err, KEVO_E_NOMEM, "no memory for the reference cache");
    goto fail;
  }
  wk_refcache_set_release(g->refs, wk_host_release, g);
  g->start_ms[3] = wk_now_ms() - t0;
  *out = g;
  return KEVO_OK;
fail:
  kevo_gpu_close(g);
  return rc;
}

void kevo_gpu_close(kevo_gpu *g) {
  if (!g) return;
  wk_refcache_free(g->refs); /* page-locked buffers: before the context goes */
  g->refs = NULL;
  if (g->drv.lib && g->ctx) {
    devk_unload(DRV, &g->dk);
    wk_pool_drain(g);
    if (g->flush) DRV->cuMemFree(g->flush);
    if (g->stats) DRV->cuMemFree(g->stats);
    if (g->stream) DRV->cuStreamDestroy(g->stream);
    DRV->cuDevicePrimaryCtxRelease(g->dev);
  }
  kevo_nvml_close(g->nvml);
  if (g->drv.lib) cudrv_unload(DRV);
  free(g);
}

void kevo_gpu_print_start(const kevo_gpu *g, FILE *f) {
  fprintf(f,
          "kevo worker: device open in %.0f ms: known at %.0f, context at %.0f, its kernels "
          "at %.0f (compiled and loaded)\n",
          g->start_ms[3], g->start_ms[0], g->start_ms[1], g->start_ms[2]);
}

cJSON *kevo_gpu_device_json(const kevo_gpu *g) {
  cJSON *d = cJSON_CreateObject();
  cJSON_AddStringToObject(d, "name", g->name);
  cJSON *cc = cJSON_AddArrayToObject(d, "cc");
  cJSON_AddItemToArray(cc, cJSON_CreateNumber(g->cc_major));
  cJSON_AddItemToArray(cc, cJSON_CreateNumber(g->cc_minor));
  cJSON_AddNumberToObject(d, "sms", g->sms);
  cJSON_AddNumberToObject(d, "mem_bytes", (double)g->mem_bytes);
  cJSON_AddNumberToObject(d, "l2_bytes", (double)g->l2_bytes);
  cJSON_AddNumberToObject(d, "driver", g->driver);
  cJSON_AddNumberToObject(d, "clock_mhz", g->clock_mhz);
  cJSON_AddNumberToObject(d, "copy_gbps", round(g->copy_gbps * 10) / 10);
  cJSON_AddNumberToObject(d, "peak_tflops", round(g->peak_tflops));
  static const char *const rate_names[DK_RATE_KINDS] = {
      "f32_fma", "f64_fma", "f16_mma", "bf16_mma", "tf32_mma", "s8_mma", "f64_mma"};
  cJSON *m = cJSON_AddObjectToObject(d, "measured_tflops");
  for (int k = 0; k < DK_RATE_KINDS; k++)
    if (g->rate_tflops[k] > 0)
      cJSON_AddNumberToObject(m, rate_names[k], round(g->rate_tflops[k] * 10) / 10);
  if (g->pci_bus[0]) cJSON_AddStringToObject(d, "pci_bus", g->pci_bus);
  return d;
}

int kevo_gpu_list(cJSON **out, kevo_error *err) {
  *out = NULL;
  cudrv drv = {0};
  int rc = cudrv_load(&drv, err), count = 0;
  if (rc) return rc;
  CUresult r = drv.cuInit(0);
  if (r == CUDA_SUCCESS) r = drv.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS) {
    rc = kevo_fail(err, KEVO_E_NOGPU, "cuInit: %s: %s", cudrv_errname(&drv, r),
                   cudrv_errstr(&drv, r));
    cudrv_unload(&drv);
    return rc;
  }
  cJSON *list = cJSON_CreateArray();
  for (int i = 0; list && i < count; i++) {
    CUdevice dev;
    if (drv.cuDeviceGet(&dev, i) != CUDA_SUCCESS) continue;
    char name[256] = "", bus[64] = "";
    int major = 0, minor = 0;
    size_t mem = 0;
    drv.cuDeviceGetName(name, sizeof name - 1, dev);
    drv.cuDeviceGetPCIBusId(bus, sizeof bus, dev);
    drv.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    drv.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    drv.cuDeviceTotalMem(&mem, dev);
    cJSON *d = cJSON_CreateObject();
    cJSON_AddNumberToObject(d, "index", i);
    cJSON_AddStringToObject(d, "name", name);
    cJSON *cc = cJSON_AddArrayToObject(d, "cc");
    cJSON_AddItemToArray(cc, cJSON_CreateNumber(major));
    cJSON_AddItemToArray(cc, cJSON_CreateNumber(minor));
    cJSON_AddStringToObject(d, "pci_bus", bus);
    cJSON_AddNumberToObject(d, "mem_bytes", (double)mem);
    cJSON_AddItemToArray(list, d);
  }
  cudrv_unload(&drv);
  if (!list) return kevo_fail(err, KEVO_E_NOMEM, "no memory for the device list");
  *out = list;
  return KEVO_OK;
}
