/* gpubench.c: the timing loop (design.md "Bench"). Candidate and reference alternate rep by rep
 * on the same inputs (the last verify trial's), each rep timed with CUDA events around its
 * launches only; the L2 is flushed before every rep and outputs are poisoned after it, both
 * untimed, so no rep sees another's cached data or results. Repetitions go on until both
 * relative standard errors are under the target, or the time or rep cap. Then the candidate is
 * checked once more against the reference, and its time against the physical floor.
 *
 * Every candidate rep, warm-up included, is also checked: right after it (untimed, before the
 * poisoning) its outputs are checksummed into a slot of a device array. Verification already
 * demanded bitwise-identical outputs from two runs, so after the final check against the
 * reference every timed rep's checksum must equal the verified output's: a kernel that skips
 * work or changes its answer once it is being timed fails whichever rep it does it in, however
 * many calls it waits first (no minimum rep count is needed for that). */
#include "gpueval_int.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DRV (&e->g->drv)

typedef struct bench_opts {
  double warmup_ms, max_ms, target_rse;
  int min_reps, max_reps, l2_flush;
} bench_opts;

static double num(const cJSON *o, const char *k, double dflt, double lo, double hi) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  if (!cJSON_IsNumber(v)) return dflt;
  return v->valuedouble < lo ? lo : v->valuedouble > hi ? hi : v->valuedouble;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int cmp_int(const void *a, const void *b) {
  return *(const int *)a - *(const int *)b;
}

typedef struct summary {
  double median, min, p10, p90, mean, rse;
} summary;

/* Summarizes n samples (sorts a copy). */
static summary summarize(const double *v, int n) {
  summary s = {0};
  if (n < 1) return s;
  double *c = malloc((size_t)n * sizeof *c);
  if (!c) return s;
  memcpy(c, v, (size_t)n * sizeof *c);
  qsort(c, (size_t)n, sizeof *c, cmp_double);
  s.median = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
  s.min = c[0];
  s.p10 = c[(int)(0.1 * (n - 1))];
  s.p90 = c[(int)ceil(0.9 * (n - 1))];
  double sum = 0, sq = 0;
  for (int i = 0; i < n; i++)
    sum += c[i];
  s.mean = sum / n;
  for (int i = 0; i < n; i++)
    sq += (c[i] - s.mean) * (c[i] - s.mean);
  s.rse = n > 1 && s.mean > 0 ? sqrt(sq / (n - 1)) / sqrt((double)n) / s.mean : 1.0;
  free(c);
  return s;
}

/* Adds the checksum of every output buffer (guard band included) of shape s into *slot. */
static CUresult checksum_outputs(wk_eval *e, wk_shape *s, CUdeviceptr slot) {
  CUresult r = CUDA_SUCCESS;
  for (int i = 0; !r && i < e->ntensors; i++)
    if (e->tensors[i].output)
      r = devk_checksum(DRV, &e->g->dk, e->g->stream, s->t[i].ptr, s->t[i].bytes, slot);
  return r;
}

/* One rep of plan p: [flush L2], start event, launches, stop event, [checksum the candidate's
 * outputs into slot], then poison the outputs. */
static int rep(wk_eval *e, wk_shape *s, wk_plan *p, int cand, CUevent a, CUevent b, int flush,
               CUdeviceptr slot) {
  kevo_gpu *g = e->g;
  CUresult r = CUDA_SUCCESS;
  if (flush) r = DRV->cuMemsetD32Async(g->flush, ++g->flush_count, g->flush_bytes / 4, g->stream);
  if (!r) r = DRV->cuEventRecord(a, g->stream);
  if (r) return wk_cuda_fail(e, r, "timing");
  if (wk_plan_run(e, p, cand)) return -1;
  r = DRV->cuEventRecord(b, g->stream);
  if (!r && cand && slot) r = checksum_outputs(e, s, slot);
  if (r) return wk_cuda_fail(e, r, "timing");
  return wk_poison_outputs(e, s, wk_poison_a);
}

/* Runs pairs of reps (candidate and reference, order alternating) and appends their times. */
static int pair(wk_eval *e, wk_shape *s, CUevent *ev4, int k, const bench_opts *o, double *tc,
                double *tr, CUdeviceptr slot) {
  int cand_first = k % 2 == 0 || s->ref.nk == 0;
  int nplans = s->ref.nk == 0 ? 1 : 2; /* an external reference is timed by its own host */
  for (int j = 0; j < nplans; j++) {
    int cand = (j == 0) == cand_first;
    if (rep(e, s, cand ? &s->cand : &s->ref, cand, ev4[2 * j], ev4[2 * j + 1], o->l2_flush, slot))
      return -1;
  }
  /* a failure surfacing here is the candidate's unless the reference alone ran badly; the
   * reference ran clean through verify, so it is judged the candidate's */
  if (wk_plan_sync(e, 1, "timing the candidate")) return -1;
  float ms[2] = {0, 0};
  for (int j = 0; j < nplans; j++) {
    CUresult r = DRV->cuEventElapsedTime(&ms[j], ev4[2 * j], ev4[2 * j + 1]);
    if (r) return wk_cuda_fail(e, r, "reading event times");
  }
  *tc = cand_first ? ms[0] : ms[1];
  *tr = cand_first ? ms[1] : ms[0];
  return 0;
}

static void add(cJSON *o, const char *k, double v, double scale) {
  cJSON_AddNumberToObject(o, k, isfinite(v) ? round(v * scale) / scale : 0);
}

/* The dense peak (TFLOP/s, at the worker's max SM clock) of the fastest math a kernel with
 * these inputs can use: the tensor cores for 16-bit float inputs, the FMA units (f32) or FP64
 * tensor cores (f64) otherwise; from the per-SM rates of the GPUs whose rates are known here
 * (sm_90: 4096 / 256 / 256 flops per clock per SM; sm_80: 2048 / 128 / 128). 0 elsewhere:
 * then the roofline is the memory one alone. The narrowest float input decides. */
static double compute_peak_tflops(const wk_eval *e, const char **unit) {
  const kevo_gpu *g = e->g;
  int bits = 0;
  for (int i = 0; i < e->ntensors; i++) {
    int dt = e->tensors[i].dt;
    int b = dt == DK_F16 || dt == DK_BF16 ? 16 : dt == DK_F32 ? 32 : dt == DK_F64 ? 64 : 0;
    if (!e->tensors[i].output && b && (!bits || b < bits)) bits = b;
  }
  double per_clk = 0;
  if (g->cc_major == 9 && g->cc_minor == 0)
    per_clk = bits == 16 ? 4096 : bits == 32 ? 256 : bits == 64 ? 256 : 0;
  else if (g->cc_major == 8 && g->cc_minor == 0)
    per_clk = bits == 16 ? 2048 : bits == 32 ? 128 : bits == 64 ? 128 : 0;
  *unit = bits == 16 ? "tensor-core" : bits == 32 ? "FMA" : "FP64";
  return per_clk * g->sms * g->clock_mhz * 1e6 / 1e12;
}

int wk_bench(wk_eval *e, wk_shape *s) {
  kevo_gpu *g = e->g;
  const cJSON *bj = cJSON_GetObjectItemCaseSensitive(e->req, "bench");
  const cJSON *cost = cJSON_GetObjectItemCaseSensitive(e->req, "cost");
  bench_opts o = {
      .warmup_ms = num(bj, "warmup_ms", 25, 0, 10000),
      .max_ms = num(bj, "max_ms", 1500, 1, 600000),
      .target_rse = num(bj, "target_rse", 0.01, 1e-6, 1),
      .min_reps = (int)num(bj, "min_reps", 10, 2, 1000000),
      .max_reps = (int)num(bj, "max_reps", 2000, 2, 1000000),
      .l2_flush = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(bj, "l2_flush")),
  };
  if (o.max_reps < o.min_reps) o.max_reps = o.min_reps;
  double bytes = num(cost, "bytes", 0, 0, 1e18), flops = num(cost, "flops", 0, 0, 1e24);
  CUevent evs[4] = {0};
  double *tc = malloc((size_t)o.max_reps * sizeof *tc),
         *tr = malloc((size_t)o.max_reps * sizeof *tr);
  int *clk = malloc((size_t)o.max_reps * sizeof *clk);
  int rc = -1, n = 0, nclk = 0, temp_max = -1, nwarm = 0;
  /* checksum slots: [0] the sum over warm-up reps, [1 + k] timed rep k, [max_reps + 1] the
   * verified output */
  CUdeviceptr sums = 0;
  uint64_t *host_sums = calloc((size_t)o.max_reps + 2, sizeof *host_sums);
  if (!tc || !tr || !clk || !host_sums) {
    wk_fail(e, "error", "bench", "no host memory for %d timing samples", o.max_reps);
    goto out;
  }
  for (int i = 0; i < 4; i++) {
    CUresult r = DRV->cuEventCreate(&evs[i], CU_EVENT_DEFAULT);
    if (r) {
      wk_cuda_fail(e, r, "cuEventCreate");
      goto out;
    }
  }
  CUresult mr = DRV->cuMemAlloc(&sums, ((size_t)o.max_reps + 2) * 8);
  if (!mr) mr = DRV->cuMemsetD32Async(sums, 0, ((size_t)o.max_reps + 2) * 2, g->stream);
  if (mr) {
    sums = 0;
    wk_cuda_fail(e, mr, "allocating rep checksums");
    goto out;
  }
  /* every candidate rep must leave the same guard band as the final check does */
  if (wk_poison_outputs(e, s, wk_poison_a)) goto out;
  double t0 = wk_now_ms(), c, rf;
  for (int k = 0; k < 2 || wk_now_ms() - t0 < o.warmup_ms; k++, nwarm++)
    if (pair(e, s, evs, k, &o, &c, &rf, sums)) goto out;
  t0 = wk_now_ms();
  for (;;) {
    if (pair(e, s, evs, n, &o, &tc[n], &tr[n], sums + 8 * ((CUdeviceptr)n + 1))) goto out;
    n++;
    int mhz = kevo_nvml_sm_clock(g->nvml), temp = kevo_nvml_temp(g->nvml);
    if (mhz > 0) clk[nclk++] = mhz;
    if (temp > temp_max) temp_max = temp;
    if (n >= o.max_reps || wk_now_ms() - t0 > o.max_ms) break;
    if (n >= o.min_reps && summarize(tc, n).rse < o.target_rse &&
        (s->ref.nk == 0 || summarize(tr, n).rse < o.target_rse))
      break;
  }
  double wall = wk_now_ms() - t0;
  summary sc = summarize(tc, n), sr = summarize(tr, n);
  qsort(clk, (size_t)nclk, sizeof *clk, cmp_int);
  int mid_clk = nclk ? clk[nclk / 2] : -1;
  double floor_ms = 0;
  if (bytes > 0 && g->copy_gbps > 0) floor_ms = bytes / (g->copy_gbps * 1e9) * 1e3;
  if (flops > 0 && g->peak_tflops > 0 && flops / (g->peak_tflops * 1e12) * 1e3 > floor_ms)
    floor_ms = flops / (g->peak_tflops * 1e12) * 1e3;
  cJSON *b = e->bench = cJSON_CreateObject();
  add(b, "median_ms", sc.median, 1e6);
  add(b, "min_ms", sc.min, 1e6);
  add(b, "p10_ms", sc.p10, 1e6);
  add(b, "p90_ms", sc.p90, 1e6);
  add(b, "rse", sc.rse, 1e6);
  cJSON_AddNumberToObject(b, "reps", n);
  if (s->ref.nk) { /* else the driver adds the external reference's own timings */
    add(b, "ref_median_ms", sr.median, 1e6);
    add(b, "ref_rse", sr.rse, 1e6);
    add(b, "speedup", sc.median > 0 ? sr.median / sc.median : 0, 1e4);
  }
  cJSON_AddNumberToObject(b, "sm_clock_mhz", mid_clk);
  cJSON_AddNumberToObject(b, "temp_c", temp_max);
  cJSON_AddNumberToObject(b, "bytes", bytes);
  cJSON_AddNumberToObject(b, "flops", flops);
  double secs = sc.median * 1e-3;
  add(b, "gbps", secs > 0 ? bytes / secs / 1e9 : 0, 10);
  add(b, "tflops", secs > 0 ? flops / secs / 1e12 : 0, 1e3);
  /* the roofline: the slower of moving the bytes at the copy bandwidth and doing the flops at
   * the compute peak for the inputs' dtype, as a share of the measured time */
  const char *unit = "";
  double peak = flops > 0 ? compute_peak_tflops(e, &unit) : 0;
  double mem_ms = g->copy_gbps > 0 ? bytes / (g->copy_gbps * 1e9) * 1e3 : 0;
  double math_ms = peak > 0 ? flops / (peak * 1e12) * 1e3 : 0;
  add(b, "roofline_pct", sc.median > 0 ? 100 * fmax(mem_ms, math_ms) / sc.median : 0, 10);
  cJSON_AddStringToObject(b, "bound", math_ms > mem_ms ? "compute" : "memory");
  if (peak > 0) {
    add(b, "peak_tflops", peak, 10);
    cJSON_AddStringToObject(b, "peak_of", unit);
  }
  add(b, "floor_ms", floor_ms, 1e6);
  cJSON_AddBoolToObject(b, "l2_flush", o.l2_flush);
  add(b, "wall_ms", wall, 10);
  /* the candidate must still be right after being called many times */
  if (wk_recheck(e, s, "bench")) goto out;
  /* ... and must have given that same output in every rep, timed or warm-up */
  CUdeviceptr golden = sums + 8 * ((CUdeviceptr)o.max_reps + 1);
  mr = checksum_outputs(e, s, golden);
  if (!mr) mr = DRV->cuStreamSynchronize(g->stream);
  if (!mr) mr = DRV->cuMemcpyDtoH(host_sums, sums, ((size_t)o.max_reps + 2) * 8);
  if (mr) {
    wk_cuda_fail(e, mr, "reading rep checksums");
    goto out;
  }
  uint64_t want = host_sums[o.max_reps + 1];
  for (int k = 0; k < n; k++) {
    if (host_sums[k + 1] != want) {
      wk_fail(e, "wrong", "bench",
              "timed repetition %d of %d gave a different output than the verified one (a kernel "
              "must compute the same answer every time it is called)",
              k + 1, n);
      goto out;
    }
  }
  if (host_sums[0] != want * (uint64_t)nwarm) {
    wk_fail(e, "wrong", "bench",
            "a warm-up repetition gave a different output than the verified one (a kernel must "
            "compute the same answer every time it is called)");
    goto out;
  }
  if (floor_ms > 0 && sc.median < 0.9 * floor_ms) {
    wk_fail(e, "implausible", "bench",
            "median %.4f ms is under 0.9x the physical floor of %.4f ms (%.0f bytes at the "
            "measured copy bandwidth of %.0f GB/s, %.0f flops at %.0f TFLOP/s): quarantined, "
            "check the recipe's cost or the timing",
            sc.median, floor_ms, bytes, g->copy_gbps, flops, g->peak_tflops);
    goto out;
  }
  rc = 0;
out:
  if (sums) DRV->cuMemFree(sums);
  free(host_sums);
  for (int i = 0; i < 4; i++)
    if (evs[i]) DRV->cuEventDestroy(evs[i]);
  free(tc);
  free(tr);
  free(clk);
  return rc;
}
