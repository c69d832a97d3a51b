/* gpubench.c: the timing loop (design.md "Bench", docs/worker.md "Threat model"). The reference
 * is first timed alone on its pristine inputs; then candidate and reference alternate rep by
 * rep, each timed with CUDA events around its launches only. Before every rep of either kernel
 * the L2 is reset (persisting lines and lines pinned with an evict_last policy included); the
 * candidate's reps rotate over the three verified input sets, and right after each one, once it
 * has finished, its outputs and inputs get a keyed digest that must equal the verified set's:
 * a kernel that replays, skips or forges an answer, or touches its inputs, in any rep, warm-up
 * included, fails. The digests are read back before the candidate runs again, so a kernel that
 * finds their words on the device cannot rewrite a past rep's. Repetitions go on until both
 * relative standard errors are under the target, or the time or rep cap. Then the reference's
 * interleaved time is compared with its time alone (a candidate that slows the reference leaves
 * a drift), and the candidate's time with the physical floor at its inputs' own arithmetic
 * rate. */
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

enum { MAX_WARMUP_REPS = 1000, REF_ALONE_REPS = 5, RACE_AFTER = 3 };
/* Racing: a candidate whose fastest of its first RACE_AFTER timed repetitions is still this much
 * slower than the incumbent's median is slower for certain (repetitions of one kernel spread by
 * well under 1% here, the same clocks and L2 state for both), and is timed no further. */
#define RACE_FACTOR 1.10

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

/* A reference slower among the candidate's reps than alone: something the candidate left
 * behind slows it (clocks, caches, state). Beyond the noise (5%, or three times the two relative
 * standard errors) the speed-up is taken against its time alone, and the result says so. */
int wk_ref_drift(const double *inter, int n, const double *alone, int nalone, double *drift,
                 double *ref_ms) {
  summary sr = summarize(inter, n), sa = summarize(alone, nalone);
  *drift = sa.median > 0 ? sr.median / sa.median - 1 : 0;
  *ref_ms = sr.median;
  double noise = fmax(0.05, 3 * (sr.rse + sa.rse));
  if (!(*drift > noise)) return 0;
  *ref_ms = sa.median;
  return 1;
}

static void add(cJSON *o, const char *k, double v, double scale) {
  cJSON_AddNumberToObject(o, k, isfinite(v) ? round(v * scale) / scale : 0);
}

/* The narrowest float input's width (8 for FP8, 16, 32, 64), or 0 without float inputs. */
static int input_bits(const wk_eval *e) {
  int bits = 0;
  for (int i = 0; i < e->ntensors; i++) {
    int dt = e->tensors[i].dt;
    int b = dt == DK_F16 || dt == DK_BF16        ? 16
            : dt == DK_F32                       ? 32
            : dt == DK_F64                       ? 64
            : dt == DK_F8E4M3 || dt == DK_F8E5M2 ? 8
                                                 : 0;
    if (!e->tensors[i].output && b && (!bits || b < bits)) bits = b;
  }
  return bits;
}

/* The datasheet's dense rate (flops per clock per SM) of the fastest math a kernel on these
 * inputs can use: the narrowest float input decides (16-bit: tensor cores; f32: TF32 tensor
 * cores, which a kernel may use where the tolerance allows, or for the roofline the FMA units;
 * f64: FP64 tensor cores); FP8 inputs and no float inputs the 8-bit rate. Known for sm_90
 * and sm_80; 0 elsewhere. *unit names it. */
static double rate_per_clock(int bits, const kevo_gpu *g, int for_floor, const char **unit) {
  int sm90 = g->cc_major == 9 && g->cc_minor == 0, sm80 = g->cc_major == 8 && g->cc_minor == 0;
  double scale = sm90 ? 1 : sm80 ? 0.5 : 0;
  *unit = bits == 16   ? "tensor-core"
          : bits == 32 ? (for_floor ? "TF32" : "FMA")
          : bits == 64 ? "FP64"
                       : "8-bit";
  double per = bits == 16 ? 4096 : bits == 32 ? (for_floor ? 2048 : 256) : bits == 64 ? 256 : 8192;
  return per * scale;
}

/* The same paths' rates as the worker measured them at start (gpudevice.c, measure_rates), in
 * TFLOP/s: the best probe of the path; 0 when none ran. *tensor: the probe is a tensor-core
 * one, whose warp-level mma may be slower than the chip's fastest form (Hopper's wgmma). */
static double measured_rate(int bits, const kevo_gpu *g, int for_floor, int *tensor) {
  const double *m = g->rate_tflops;
  *tensor = 1;
  if (bits == 16) return fmax(m[DK_RATE_F16_MMA], m[DK_RATE_BF16_MMA]);
  if (bits == 32 && for_floor) return m[DK_RATE_TF32_MMA];
  if (bits == 64) return fmax(m[DK_RATE_F64_MMA], m[DK_RATE_F64_FMA]);
  if (bits == 0 || bits == 8) return m[DK_RATE_S8_MMA]; /* FP8 runs at the 8-bit rate */
  *tensor = 0;
  return m[DK_RATE_F32_FMA];
}

/* The roofline's compute peak (TFLOP/s): the rate a kernel on these inputs runs at in the plain
 * way (f32 on the FMA units): the datasheet's at the max SM clock where the chip is known, else
 * the measured one. */
static double compute_peak_tflops(const wk_eval *e, const char **unit) {
  int bits = input_bits(e), tensor;
  double t = rate_per_clock(bits, e->g, 0, unit) * e->g->sms * e->g->clock_mhz * 1e6 / 1e12;
  return t > 0 ? t : measured_rate(bits, e->g, 0, &tensor);
}

/* The floor's rate: the fastest math the inputs' own dtype allows (never FP8 for bf16 inputs:
 * that let a padded memo of a bf16 matmul pass). A floor must be a rate no honest kernel beats,
 * and a probe gives a rate some kernel reaches: where the chip is known it is the larger of the
 * datasheet's (at the max SM clock) and the measured one (so a chip faster than its datasheet
 * cannot quarantine an honest kernel); on other chips the measured one, doubled for a
 * tensor-core path (the probe's mma.sync is not the fastest form everywhere); the chip's FP8
 * peak where nothing is known. *measured: the measured rate (0: none). */
static double floor_peak_tflops(const wk_eval *e, const char **unit, double *measured) {
  int bits = input_bits(e), tensor;
  double t = rate_per_clock(bits, e->g, 1, unit) * e->g->sms * e->g->clock_mhz * 1e6 / 1e12;
  double m = *measured = measured_rate(bits, e->g, 1, &tensor);
  if (t > 0) return fmax(t, m);
  if (m > 0) {
    *unit = bits == 16   ? "measured tensor-core rate x 2"
            : bits == 32 ? "measured TF32 rate x 2"
            : bits == 64 ? "measured FP64 rate x 2"
                         : "measured 8-bit rate x 2";
    return tensor ? 2 * m : m;
  }
  *unit = "the chip's FP8 peak";
  return e->g->peak_tflops;
}

/* Resets the L2 before a rep: persisting lines reset, then every line claimed and released. */
static CUresult l2_reset(wk_eval *e) {
  kevo_gpu *g = e->g;
  CUresult r = DRV->cuCtxResetPersistingL2Cache();
  if (r == CUDA_ERROR_NOT_SUPPORTED) r = CUDA_SUCCESS;
  if (!r) r = DRV->cuMemsetD32Async(g->flush, ++g->flush_count, g->flush_bytes / 4, g->stream);
  if (!r) r = devk_l2_reset(DRV, &g->dk, g->stream, g->flush, g->flush_bytes, g->stats + 248);
  return r;
}

typedef struct bench_state {
  wk_shape *s;
  const bench_opts *o;
  CUevent ev[4];
  int nrot;            /* verified sets to rotate over */
  int ncand;           /* candidate reps so far, warm-up included */
  int cap;             /* digest slots: two per candidate rep */
  CUdeviceptr digests; /* two device words, zeroed after each rep, the digests added into them */
  uint64_t *got;       /* [2c]: outputs of rep c, [2c + 1]: its inputs, read back at once */
  int *set_of;         /* the set rep c ran on */
} bench_state;

/* One rep of the candidate on the next set of the rotation, timed into *ms. */
static int cand_rep(wk_eval *e, bench_state *b, CUevent t0, CUevent t1, float *ms) {
  wk_shape *s = b->s;
  if (b->ncand >= b->cap) return wk_fail(e, "error", "bench", "too many repetitions");
  int k = b->ncand % b->nrot;
  wk_set *set = &s->set[k];
  CUresult r = CUDA_SUCCESS;
  if (wk_poison_outputs(e, set, wk_poison_a)) return -1;
  if (b->o->l2_flush) r = l2_reset(e);
  if (!r) r = DRV->cuEventRecord(t0, e->g->stream);
  if (r) return wk_cuda_fail(e, r, "timing");
  if (wk_plan_run(e, &s->cand, 1, set)) return -1;
  r = DRV->cuEventRecord(t1, e->g->stream);
  if (r) return wk_cuda_fail(e, r, "timing");
  /* the launch must have finished before the digest's key goes to the device */
  if (wk_plan_sync(e, 1, "timing the candidate")) return -1;
  /* the slots are cleared only now, and read back before the candidate runs again: nothing the
   * judgement rests on stays on the device while a candidate runs (it could write there) */
  r = DRV->cuMemsetD32Async(b->digests, 0, 4, e->g->stream);
  if (!r) r = wk_digest_set(e, set, 1, b->digests);
  if (!r) r = wk_digest_set(e, set, 0, b->digests + 8);
  if (!r) r = DRV->cuMemcpyDtoH(&b->got[2 * b->ncand], b->digests, 16);
  if (!r) r = DRV->cuMemsetD32Async(b->digests, 0, 4, e->g->stream); /* none stays there */
  if (!r) r = DRV->cuEventElapsedTime(ms, t0, t1);
  if (r) return wk_cuda_fail(e, r, "checking a repetition");
  b->set_of[b->ncand++] = k;
  return 0;
}

/* One rep of the reference on its pristine set, timed into *ms; its outputs are poisoned
 * right after (they never stay on the device while the candidate runs). */
static int ref_rep(wk_eval *e, bench_state *b, CUevent t0, CUevent t1, float *ms) {
  wk_set *ref = &b->s->set[WK_SET_REF];
  CUresult r = b->o->l2_flush ? l2_reset(e) : CUDA_SUCCESS;
  if (!r) r = DRV->cuEventRecord(t0, e->g->stream);
  if (r) return wk_cuda_fail(e, r, "timing");
  if (wk_plan_run(e, &b->s->ref, 0, ref)) return -1;
  r = DRV->cuEventRecord(t1, e->g->stream);
  if (r) return wk_cuda_fail(e, r, "timing");
  if (wk_poison_outputs(e, ref, wk_poison_b) || wk_plan_sync(e, 0, "timing the reference"))
    return -1;
  r = DRV->cuEventElapsedTime(ms, t0, t1);
  return r ? wk_cuda_fail(e, r, "reading event times") : 0;
}

/* A pair of reps (the order alternates), or the candidate alone for an external reference. */
static int pair(wk_eval *e, bench_state *b, int k, double *tc, double *tr) {
  float mc = 0, mr = 0;
  int cand_first = k % 2 == 0;
  if (b->s->ref.nk == 0) return cand_rep(e, b, b->ev[0], b->ev[1], &mc) ? -1 : (*tc = mc, 0);
  if (cand_first && cand_rep(e, b, b->ev[0], b->ev[1], &mc)) return -1;
  if (ref_rep(e, b, b->ev[2], b->ev[3], &mr)) return -1;
  if (!cand_first && cand_rep(e, b, b->ev[0], b->ev[1], &mc)) return -1;
  *tc = mc;
  *tr = mr;
  return 0;
}

/* Every candidate rep's digests against its set's verified ones; the reference's inputs too. */
static int check_reps(wk_eval *e, bench_state *b, int nwarm) {
  wk_shape *s = b->s;
  const uint64_t *d = b->got;
  uint64_t ref_in = 0;
  CUresult r = DRV->cuMemsetD32Async(b->digests, 0, 2, e->g->stream);
  if (!r) r = wk_digest_set(e, &s->set[WK_SET_REF], 0, b->digests);
  if (!r) r = DRV->cuMemcpyDtoH(&ref_in, b->digests, 8);
  if (r) return wk_cuda_fail(e, r, "reading repetition digests");
  int rc = 0;
  for (int c = 0; c < b->ncand && !rc; c++) {
    wk_set *set = &s->set[b->set_of[c]];
    const char *when = c < nwarm ? "warm-up" : "timed";
    int rep = c < nwarm ? c + 1 : c - nwarm + 1;
    if (d[2 * c + 1] != set->in_digest)
      rc = wk_fail(e, "input_modified", "bench",
                   "the candidate wrote to its inputs during %s repetition %d (input set %d)", when,
                   rep, b->set_of[c] + 1);
    else if (d[2 * c] != set->out_digest)
      rc = wk_fail(e, "wrong", "bench",
                   "%s repetition %d gave other outputs than the verified ones for its input set "
                   "(%d of %d; a kernel must compute the same answer every time it is called, "
                   "on whichever inputs)",
                   when, rep, b->set_of[c] + 1, b->nrot);
  }
  int last = (e->trials - 1) % b->nrot;
  if (!rc && s->ref.nk && ref_in != s->set[last].in_digest)
    rc = wk_fail(e, "input_modified", "bench",
                 "the reference's pristine inputs changed during the timing loop: the candidate "
                 "wrote outside its own buffers");
  return rc;
}

/* What the timing loop gathered, for bench_report. */
typedef struct {
  const double *tc, *tr, *alone; /* candidate, interleaved reference, reference alone (ms) */
  int *clk;                      /* SM clock samples (MHz); sorted by bench_report */
  int n, nclk, nalone, temp_max, raced;
  double wall, bytes, flops, race_ms;
} bench_samples;

/* The bench's result object from what the timing loop gathered (m): times, the reference's
 * drift, the roofline and the physical floor. Returns -1 (verdict implausible) for a median
 * under the floor, else 0. */
static int bench_report(wk_eval *e, const bench_state *b, const bench_samples *m) {
  kevo_gpu *g = e->g;
  summary sc = summarize(m->tc, m->n), sr = summarize(m->tr, m->n),
          sa = summarize(m->alone, m->nalone);
  qsort(m->clk, (size_t)m->nclk, sizeof *m->clk, cmp_int);
  int mid_clk = m->nclk ? m->clk[m->nclk / 2] : -1;
  const char *floor_unit = "";
  double floor_measured = 0;
  double floor_peak = m->flops > 0 ? floor_peak_tflops(e, &floor_unit, &floor_measured) : 0;
  double floor_ms = 0;
  if (m->bytes > 0 && g->copy_gbps > 0) floor_ms = m->bytes / (g->copy_gbps * 1e9) * 1e3;
  if (floor_peak > 0 && m->flops / (floor_peak * 1e12) * 1e3 > floor_ms)
    floor_ms = m->flops / (floor_peak * 1e12) * 1e3;
  cJSON *bo = e->bench = cJSON_CreateObject();
  add(bo, "median_ms", sc.median, 1e6);
  add(bo, "min_ms", sc.min, 1e6);
  add(bo, "p10_ms", sc.p10, 1e6);
  add(bo, "p90_ms", sc.p90, 1e6);
  add(bo, "rse", sc.rse, 1e6);
  cJSON_AddNumberToObject(bo, "reps", m->n);
  cJSON_AddNumberToObject(bo, "input_sets", b->nrot);
  if (e->sets_note[0]) cJSON_AddStringToObject(bo, "input_sets_note", e->sets_note);
  if (m->race_ms > 0) {
    cJSON_AddBoolToObject(bo, "raced", m->raced);
    add(bo, "race_ms", m->race_ms, 1e6);
  }
  if (b->s->ref.nk) { /* else the driver adds the external reference's own timings */
    add(bo, "ref_median_ms", sr.median, 1e6);
    add(bo, "ref_rse", sr.rse, 1e6);
    add(bo, "ref_alone_ms", sa.median, 1e6);
    double drift = 0, ref_ms = sr.median;
    int drifted = wk_ref_drift(m->tr, m->n, m->alone, m->nalone, &drift, &ref_ms);
    add(bo, "ref_drift_pct", 100 * drift, 100);
    if (drifted) {
      cJSON_AddStringToObject(bo, "ref_drift",
                              "the reference ran slower between the candidate's repetitions "
                              "than alone: the speed-up is against its time alone");
    }
    add(bo, "speedup", sc.median > 0 ? ref_ms / sc.median : 0, 1e4);
  }
  cJSON_AddNumberToObject(bo, "sm_clock_mhz", mid_clk);
  cJSON_AddNumberToObject(bo, "temp_c", m->temp_max);
  cJSON_AddNumberToObject(bo, "bytes", m->bytes);
  cJSON_AddNumberToObject(bo, "flops", m->flops);
  double secs = sc.median * 1e-3;
  add(bo, "gbps", secs > 0 ? m->bytes / secs / 1e9 : 0, 10);
  add(bo, "tflops", secs > 0 ? m->flops / secs / 1e12 : 0, 1e3);
  /* the roofline: the slower of moving the bytes at the copy bandwidth and doing the flops at
   * the compute peak for the inputs' dtype, as a share of the measured time */
  const char *unit = "";
  double peak = m->flops > 0 ? compute_peak_tflops(e, &unit) : 0;
  double mem_ms = g->copy_gbps > 0 ? m->bytes / (g->copy_gbps * 1e9) * 1e3 : 0;
  double math_ms = peak > 0 ? m->flops / (peak * 1e12) * 1e3 : 0;
  add(bo, "roofline_pct", sc.median > 0 ? 100 * fmax(mem_ms, math_ms) / sc.median : 0, 10);
  cJSON_AddStringToObject(bo, "bound", math_ms > mem_ms ? "compute" : "memory");
  if (peak > 0) {
    add(bo, "peak_tflops", peak, 10);
    cJSON_AddStringToObject(bo, "peak_of", unit);
  }
  add(bo, "floor_ms", floor_ms, 1e6);
  if (floor_peak > 0) {
    add(bo, "floor_tflops", floor_peak, 10);
    cJSON_AddStringToObject(bo, "floor_of", floor_unit);
    if (floor_measured > 0) add(bo, "floor_measured_tflops", floor_measured, 10);
  }
  cJSON_AddBoolToObject(bo, "l2_flush", b->o->l2_flush);
  add(bo, "wall_ms", m->wall, 10);
  if (floor_ms > 0 && sc.median < 0.9 * floor_ms) {
    wk_fail(e, "implausible", "bench",
            "median %.4f ms is under 0.9x the physical floor of %.4f ms (%.0f bytes at the "
            "measured copy bandwidth of %.0f GB/s, %.0f flops at %.0f TFLOP/s, %s): "
            "quarantined, check the recipe's cost or the timing",
            sc.median, floor_ms, m->bytes, g->copy_gbps, m->flops, floor_peak, floor_unit);
    return -1;
  }
  return 0;
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
  double race_ms = num(bj, "race_ms", 0, 0, 1e9);
  int raced = 0;
  bench_state b = {.s = s, .o = &o, .cap = o.max_reps + MAX_WARMUP_REPS};
  for (int k = 0; k < WK_ROTATE && s->set[k].verified; k++)
    b.nrot = k + 1;
  double *tc = malloc((size_t)o.max_reps * sizeof *tc),
         *tr = malloc((size_t)o.max_reps * sizeof *tr), alone[REF_ALONE_REPS];
  int *clk = malloc((size_t)o.max_reps * sizeof *clk);
  b.set_of = malloc((size_t)b.cap * sizeof *b.set_of);
  b.got = malloc(2 * (size_t)b.cap * sizeof *b.got);
  int rc = -1, n = 0, nclk = 0, temp_max = -1, nwarm = 0, nalone = 0;
  if (!tc || !tr || !clk || !b.set_of || !b.got || b.nrot < 1) {
    wk_fail(e, "error", "bench",
            b.nrot < 1 ? "no verified input set to time on" : "no host memory for timing samples");
    goto out;
  }
  for (int i = 0; i < 4; i++) {
    CUresult r = DRV->cuEventCreate(&b.ev[i], CU_EVENT_DEFAULT);
    if (r) {
      wk_cuda_fail(e, r, "cuEventCreate");
      goto out;
    }
  }
  CUresult mr = DRV->cuMemAlloc(&b.digests, 16);
  if (mr) {
    b.digests = 0;
    wk_cuda_fail(e, mr, "allocating repetition digests");
    goto out;
  }
  /* the reference alone first: the yardstick its interleaved time is checked against */
  for (; s->ref.nk && nalone < REF_ALONE_REPS; nalone++) {
    float ms = 0;
    if (ref_rep(e, &b, b.ev[2], b.ev[3], &ms)) goto out;
    alone[nalone] = ms;
  }
  double t0 = wk_now_ms(), c, rf;
  for (int k = 0; (k < 2 || wk_now_ms() - t0 < o.warmup_ms) && k < MAX_WARMUP_REPS; k++, nwarm++)
    if (pair(e, &b, k, &c, &rf)) goto out;
  t0 = wk_now_ms();
  for (;;) {
    if (pair(e, &b, n, &tc[n], &tr[n])) goto out;
    n++;
    int mhz = kevo_nvml_sm_clock(g->nvml), temp = kevo_nvml_temp(g->nvml);
    if (mhz > 0) clk[nclk++] = mhz;
    if (temp > temp_max) temp_max = temp;
    if (n >= o.max_reps || wk_now_ms() - t0 > o.max_ms) break;
    if (race_ms > 0 && n >= RACE_AFTER && summarize(tc, n).min > race_ms * RACE_FACTOR) {
      raced = 1;
      break;
    }
    if (n >= o.min_reps && summarize(tc, n).rse < o.target_rse &&
        (s->ref.nk == 0 || summarize(tr, n).rse < o.target_rse))
      break;
  }
  double wall = wk_now_ms() - t0;
  /* every rep, warm-up included, gave its set's verified outputs and left its inputs alone */
  if (check_reps(e, &b, nwarm)) goto out;
  bench_samples m = {.tc = tc,
                     .tr = tr,
                     .alone = alone,
                     .clk = clk,
                     .n = n,
                     .nclk = nclk,
                     .nalone = nalone,
                     .temp_max = temp_max,
                     .raced = raced,
                     .wall = wall,
                     .bytes = bytes,
                     .flops = flops,
                     .race_ms = race_ms};
  if (bench_report(e, &b, &m)) goto out;
  rc = 0;
out:
  if (b.digests) DRV->cuMemFree(b.digests);
  for (int i = 0; i < 4; i++)
    if (b.ev[i]) DRV->cuEventDestroy(b.ev[i]);
  free(b.set_of);
  free(b.got);
  free(tc);
  free(tr);
  free(clk);
  return rc;
}
