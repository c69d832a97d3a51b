/* gpueval.c: device set-up (context, limits, copy bandwidth), parsing an evaluate request into
 * loaded modules, buffers and launch plans, running plans, and the evaluation's result. The
 * trial loop is in gpuverify.c, the timing loop in gpubench.c. */
#include "gpueval_int.h"
#include "sha256.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const uint64_t wk_poison_a[DK_COUNT] = {
    [DK_F32] = 0x7FC0A5A57FC0A5A5ull,  [DK_F16] = 0x7E5A7E5A7E5A7E5Aull,
    [DK_BF16] = 0x7FD57FD57FD57FD5ull, [DK_F64] = 0x7FF8DEADA5A5A5A5ull,
    [DK_I32] = 0x5A5AA5A55A5AA5A5ull,  [DK_I64] = 0x5A5AA5A55A5AA5A5ull,
    [DK_U8] = 0xA5A5A5A5A5A5A5A5ull};
const uint64_t wk_poison_b[DK_COUNT] = {
    [DK_F32] = 0x7FC05A5A7FC05A5Aull,  [DK_F16] = 0x7E6B7E6B7E6B7E6Bull,
    [DK_BF16] = 0x7FEA7FEA7FEA7FEAull, [DK_F64] = 0x7FF8BEEF5A5A5A5Aull,
    [DK_I32] = 0xA5A55A5AA5A55A5Aull,  [DK_I64] = 0xA5A55A5AA5A55A5Aull,
    [DK_U8] = 0x5A5A5A5A5A5A5A5Aull};

static const struct {
  const char *name;
  size_t size;
} dtypes[DK_COUNT] = {
    [DK_F32] = {"f32", 4}, [DK_F16] = {"f16", 2}, [DK_BF16] = {"bf16", 2}, [DK_F64] = {"f64", 8},
    [DK_I32] = {"i32", 4}, [DK_I64] = {"i64", 8}, [DK_U8] = {"u8", 1}};

size_t wk_dtype_size(int dt) {
  return dt >= 0 && dt < DK_COUNT ? dtypes[dt].size : 0;
}

const char *wk_dtype_name(int dt) {
  return dt >= 0 && dt < DK_COUNT ? dtypes[dt].name : "?";
}

int wk_dtype_parse(const char *s) {
  for (int i = 0; s && i < DK_COUNT; i++)
    if (!strcmp(s, dtypes[i].name)) return i;
  return -1;
}

double wk_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- device ---------------------------------------------------------------------------- */

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

static int attr(kevo_gpu *g, CUdevice_attribute a) {
  int v = 0;
  if (DRV->cuDeviceGetAttribute(&v, a, g->dev) != CUDA_SUCCESS) return 0;
  return v;
}

int kevo_gpu_open(int ordinal, kevo_gpu **out, kevo_error *err) {
  *out = NULL;
  kevo_gpu *g = calloc(1, sizeof *g);
  if (!g) return kevo_fail(err, KEVO_E_NOMEM, "no memory for the worker");
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
  if ((rc = devk_load(DRV, g->cc_major, g->cc_minor, &g->dk, err))) goto fail;
  g->flush_bytes = 2 * g->l2_bytes;
  if (g->flush_bytes < ((size_t)64 << 20)) g->flush_bytes = (size_t)64 << 20;
  rc = gpu_check(g, DRV->cuMemAlloc(&g->flush, g->flush_bytes), "L2 flush buffer", err);
  if (!rc) rc = gpu_check(g, DRV->cuMemAlloc(&g->stats, 256), "stats buffer", err);
  if (!rc) rc = measure_copy(g, err);
  if (rc) goto fail;
  char bus[64] = "";
  if (DRV->cuDeviceGetPCIBusId(bus, sizeof bus, g->dev) == CUDA_SUCCESS)
    g->nvml = kevo_nvml_open(bus);
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
    if (g->flush) DRV->cuMemFree(g->flush);
    if (g->stats) DRV->cuMemFree(g->stats);
    if (g->stream) DRV->cuStreamDestroy(g->stream);
    DRV->cuDevicePrimaryCtxRelease(g->dev);
  }
  kevo_nvml_close(g->nvml);
  if (g->drv.lib) cudrv_unload(DRV);
  free(g);
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
  return d;
}

/* ---- evaluation ------------------------------------------------------------------------- */

/* A number, or a string ("nan", "inf", "-inf") where JSON has no number for it. */
static void add_value(cJSON *o, const char *k, double v) {
  if (isnan(v))
    cJSON_AddStringToObject(o, k, "nan");
  else if (isinf(v))
    cJSON_AddStringToObject(o, k, v > 0 ? "inf" : "-inf");
  else
    cJSON_AddNumberToObject(o, k, v);
}

static cJSON *result_json(wk_eval *e, double ms) {
  cJSON *r = cJSON_CreateObject();
  const char *verdict = e->verdict ? e->verdict : "ok";
  cJSON_AddBoolToObject(r, "ok", !strcmp(verdict, "ok"));
  cJSON_AddStringToObject(r, "verdict", verdict);
  cJSON_AddStringToObject(r, "stage", e->stage ? e->stage : "done");
  if (!e->verdict) {
    const cJSON *b = e->bench ? cJSON_GetObjectItemCaseSensitive(e->bench, "speedup") : NULL;
    if (b)
      snprintf(e->message, sizeof e->message,
               "verified (%d trials over %d shapes); %.3fx the reference", e->trials_done,
               e->shapes_done, b->valuedouble);
    else
      snprintf(e->message, sizeof e->message, "verified (%d trials over %d shapes)", e->trials_done,
               e->shapes_done);
  }
  cJSON_AddStringToObject(r, "message", e->message);
  cJSON *v = cJSON_AddObjectToObject(r, "verify");
  cJSON_AddNumberToObject(v, "trials", e->trials_done);
  cJSON_AddNumberToObject(v, "shapes", e->shapes_done);
  cJSON_AddNumberToObject(v, "mismatches", (double)e->mismatches);
  cJSON *flags = cJSON_AddArrayToObject(v, "flags");
  if (e->verdict && strcmp(e->verdict, "ok"))
    cJSON_AddItemToArray(flags, cJSON_CreateString(e->verdict));
  cJSON_AddNumberToObject(v, "ms", round(e->verify_ms * 10) / 10);
  if (e->worst.have) {
    wk_worst *w = &e->worst;
    cJSON *o = cJSON_AddObjectToObject(v, "worst");
    cJSON_AddStringToObject(o, "shape", w->shape);
    cJSON_AddStringToObject(o, "tensor", w->tensor);
    cJSON *idx = cJSON_AddArrayToObject(o, "index");
    for (int i = 0; i < w->rank; i++)
      cJSON_AddItemToArray(idx, cJSON_CreateNumber((double)w->index[i]));
    cJSON_AddNumberToObject(o, "flat", (double)w->flat);
    add_value(o, "expected", w->expected);
    add_value(o, "actual", w->actual);
    add_value(o, "abs_err", w->abs_err);
    add_value(o, "rel_err", w->rel_err);
  }
  if (e->bench) {
    if (!cJSON_GetObjectItemCaseSensitive(e->bench, "ms")) /* the bench stage's wall time */
      cJSON_AddNumberToObject(e->bench, "ms", round((ms - e->verify_ms) * 10) / 10);
    cJSON_AddItemToObject(r, "bench", e->bench);
    e->bench = NULL;
  }
  if (e->missing) {
    cJSON_AddItemToObject(r, "missing", e->missing);
    e->missing = NULL;
  }
  cJSON *d = cJSON_AddObjectToObject(r, "device");
  cJSON_AddStringToObject(d, "name", e->g->name);
  cJSON *cc = cJSON_AddArrayToObject(d, "cc");
  cJSON_AddItemToArray(cc, cJSON_CreateNumber(e->g->cc_major));
  cJSON_AddItemToArray(cc, cJSON_CreateNumber(e->g->cc_minor));
  cJSON_AddNumberToObject(d, "copy_gbps", round(e->g->copy_gbps * 10) / 10);
  cJSON_AddNumberToObject(r, "ms", round(ms * 10) / 10);
  return r;
}

cJSON *kevo_gpu_evaluate(kevo_gpu *g, const cJSON *req, const kevo_blob *blobs, size_t nblobs,
                         int *fatal) {
  double t0 = wk_now_ms();
  wk_eval *e = calloc(1, sizeof *e);
  wk_shape *s = calloc(1, sizeof *s);
  cJSON *res = NULL;
  *fatal = 0;
  if (!e || !s) {
    free(e);
    free(s);
    res = cJSON_CreateObject();
    cJSON_AddBoolToObject(res, "ok", 0);
    cJSON_AddStringToObject(res, "verdict", "error");
    cJSON_AddStringToObject(res, "stage", "verify");
    cJSON_AddStringToObject(res, "message", "E_NOMEM: the worker is out of host memory");
    return res;
  }
  e->g = g;
  e->req = req;
  e->cur_stage = "verify";
  if (wk_parse(e, blobs, nblobs) == 0 && e->external && (e->missing = wk_missing_refs(e)))
    wk_fail(e, "error", "verify",
            "E_NOREF: the external reference outputs of %d (shape, trial) pairs are not in the "
            "worker's cache: put_reference them (listed in \"missing\") and evaluate again",
            cJSON_GetArraySize(e->missing));
  if (!e->verdict) {
    /* extra shapes first (small, find bugs fast), the benchmark shape last: its buffers and
     * the last trial's inputs stay for the timing loop */
    int nshapes = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(req, "shapes"));
    for (int k = 1; k <= nshapes && !e->verdict; k++) {
      int index = k % nshapes;
      int rc = wk_shape_setup(e, s, index);
      if (!rc) rc = wk_verify_shape(e, s);
      if (!rc) e->shapes_done++;
      if (e->crashed) break;
      if (rc || index != 0) wk_shape_teardown(e, s);
    }
    e->verify_ms = wk_now_ms() - t0;
    const cJSON *bj = cJSON_GetObjectItemCaseSensitive(req, "bench");
    if (!e->verdict && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(bj, "enabled"))) {
      e->cur_stage = "bench";
      wk_bench(e, s);
    }
    if (!e->crashed) wk_shape_teardown(e, s);
  }
  if (!e->crashed) wk_unload(e);
  *fatal = e->crashed;
  res = result_json(e, wk_now_ms() - t0);
  cJSON_Delete(e->bench);
  cJSON_Delete(e->missing);
  free(e);
  free(s);
  return res;
}

cJSON *kevo_gpu_error_reply(const char *code, const char *msg) {
  cJSON *r = cJSON_CreateObject();
  char text[2300];
  snprintf(text, sizeof text, "%s: %s", code, msg);
  cJSON_AddBoolToObject(r, "ok", 0);
  cJSON_AddStringToObject(r, "error", text);
  return r;
}
