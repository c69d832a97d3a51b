/* gpueval.c: one evaluate request from start to result: parse it (gpuplan.c), verify the extra
 * shapes then the benchmark shape (gpuverify.c), time it (gpubench.c), and build the evaluation
 * result. The device is opened in gpudevice.c. */
#include "gpueval.h"
#include "gpuprofile.h"
#include "gpueval_int.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    const cJSON *raced = e->bench ? cJSON_GetObjectItemCaseSensitive(e->bench, "raced") : NULL;
    if (b)
      snprintf(e->message, sizeof e->message,
               "verified (%d trials over %d shapes); %.3fx the reference%s", e->trials_done,
               e->shapes_done, b->valuedouble,
               cJSON_IsTrue(raced) ? " (raced: clearly slower than the fastest so far, timed no "
                                     "further)"
                                   : "");
    else
      snprintf(e->message, sizeof e->message, "verified (%d trials over %d shapes)", e->trials_done,
               e->shapes_done);
  }
  cJSON_AddStringToObject(r, "message", e->message);
  cJSON *v = cJSON_AddObjectToObject(r, "verify");
  cJSON_AddNumberToObject(v, "trials", e->trials_done);
  cJSON_AddNumberToObject(v, "shapes", e->shapes_done);
  cJSON_AddNumberToObject(v, "mismatches", (double)e->mismatches);
  cJSON_AddNumberToObject(v, "held_out_shapes", e->held_out_done);
  cJSON_AddNumberToObject(v, "stress_trials", e->stress_done);
  if (e->seed_secret) cJSON_AddStringToObject(v, "seed", "secret");
  cJSON *flags = cJSON_AddArrayToObject(v, "flags");
  if (e->verdict && strcmp(e->verdict, "ok"))
    cJSON_AddItemToArray(flags, cJSON_CreateString(e->verdict));
  cJSON_AddNumberToObject(v, "ms", round(e->verify_ms * 10) / 10);
  /* where verify's time went: each shape in the order verified (the benchmark shape last), and
   * loading the candidate's twin modules (gpuverify.c) */
  if (e->shapes_done > 0) {
    cJSON *sm = cJSON_AddArrayToObject(v, "shape_ms");
    for (int i = 0; i < e->shapes_done && i < WK_MAX_SHAPES; i++)
      cJSON_AddItemToArray(sm, cJSON_CreateNumber(round(e->shape_ms[i] * 100) / 100));
    cJSON_AddNumberToObject(v, "twin_ms", round(e->twin_ms * 100) / 100);
  }
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
    const cJSON *bj = cJSON_GetObjectItemCaseSensitive(req, "bench");
    int bench = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(bj, "enabled"));
    for (int k = 1; k <= nshapes && !e->verdict; k++) {
      int index = k % nshapes;
      double ts = wk_now_ms();
      /* the benchmark shape keeps three verified input sets for the timing loop (one when
       * five sets do not fit the GPU) */
      int rc = wk_shape_setup(e, s, index, index == 0 && bench ? wk_bench_sets(e, 0) : 3);
      if (!rc) rc = wk_verify_shape(e, s);
      if (k <= WK_MAX_SHAPES) e->shape_ms[k - 1] = wk_now_ms() - ts;
      if (!rc) e->shapes_done++;
      if (!rc && s->held_out) e->held_out_done++;
      if (e->crashed) break;
      if (rc || index != 0) wk_shape_teardown(e, s);
    }
    e->verify_ms = wk_now_ms() - t0;
    if (!e->verdict && bench) {
      e->cur_stage = "bench";
      kevo_gpu_profile_standby_settle(20000); /* no timing while a profiler child sets up */
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
  if (s) { /* after a crash no teardown ran: the plans' host arrays still go */
    wk_plan_release(&s->cand);
    wk_plan_release(&s->again);
    wk_plan_release(&s->ref);
  }
  free(s);
  return res;
}
