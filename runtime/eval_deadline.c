/* eval_deadline.c: the worker's deadline for one evaluate request, from the problem's size and
 * its reference's measured time (eval_deadline.h). */
#include "eval_deadline.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>

static double num(const cJSON *o, const char *k, double dflt) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) && v->valuedouble >= 0 ? v->valuedouble : dflt;
}

void eval_deadline_of(const cJSON *req, int ncand, double copy_gbps, double ref_ms,
                      eval_deadline *out) {
  const cJSON *bench = cJSON_GetObjectItemCaseSensitive(req, "bench");
  double bytes = num(cJSON_GetObjectItemCaseSensitive(req, "cost"), "bytes", 0);
  double trials = num(cJSON_GetObjectItemCaseSensitive(req, "verify"), "trials", 5);
  double shapes = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(req, "shapes"));
  double gbps = copy_gbps > 0 ? copy_gbps : 1000;
  if (ncand < 1) ncand = 1;
  if (shapes < 1) shapes = 1;
  /* one run: the reference's time when measured, never less than moving its bytes once (every
   * shape taken at the benchmark shape's size: an upper bound) */
  double move_ms = bytes / (gbps * 1e9) * 1e3;
  double run_ms = fmax(fmax(ref_ms, move_ms), 0.01);
  double runs = ncand * shapes * trials * 3; /* the candidate twice, the reference once */
  double verify_s = runs * run_ms * EVAL_DEADLINE_SLOWER / 1e3;
  double bench_s = 0;
  if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(bench, "enabled"))) {
    /* the loop's wall-time bound, plus its fewest reps of both kernels at the slow rate */
    double loop_ms = num(bench, "warmup_ms", 25) + num(bench, "max_ms", 1500);
    double reps = num(bench, "min_reps", 10) + 2;
    bench_s = ncand * (loop_ms + reps * run_ms * (EVAL_DEADLINE_SLOWER + 1)) / 1e3;
  }
  double s = EVAL_DEADLINE_START_S + verify_s + bench_s;
  out->s = fmin(fmax(s, EVAL_DEADLINE_FLOOR_S), EVAL_DEADLINE_CEILING_S);
  out->run_ms = run_ms;
  snprintf(out->why, sizeof out->why,
           "the deadline for this problem: %.0f runs at up to %.0fx %.3g ms (%s), timing %.1f s, "
           "start-up %.0f s, within [%.0f, %.0f] s",
           runs, EVAL_DEADLINE_SLOWER, run_ms,
           ref_ms >= move_ms && ref_ms > 0 ? "the reference's measured time"
                                           : "its bytes at the copy bandwidth",
           bench_s, EVAL_DEADLINE_START_S, EVAL_DEADLINE_FLOOR_S, EVAL_DEADLINE_CEILING_S);
}
