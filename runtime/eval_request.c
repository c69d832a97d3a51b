/* eval_request.c: the evaluate request the worker gets (docs/architecture.md "Evaluator worker
 * protocol") built from a recipe, and the worker's reply merged into a result. */
#include "eval_request.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* A held-out shape moves at most this much over all its tensors: it must find bugs, not cost
 * the loop its speed (docs/worker.md "Held-out shapes"). */
#define HELD_OUT_BYTES (64.0 * 1024 * 1024)

uint64_t eval_secret64(void) {
  uint64_t x = 0;
  if (getrandom(&x, sizeof x, 0) != (ssize_t)sizeof x) { /* never on Linux >= 3.17 */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    x = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec;
  }
  return x;
}

void eval_shapes_make(const kevo_recipe *r, int held, eval_shapes *out) {
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < r->nshapes && i < 64; i++)
    out->s[out->n++] = r->shapes[i]; /* borrowed */
  uint64_t rng = eval_secret64();
  /* held-out shape h puts param (first + h) in the top half of its domain, where limits a
   * kernel assumes break (a log-uniform draw seldom gets there); with one param the first
   * shape stays log-uniform */
  size_t np = r->nparams, first = np ? (size_t)(eval_secret64() % np) : 0;
  for (int tries = 0; held && out->nheld < EVAL_HELD_OUT && tries < 8 * EVAL_HELD_OUT; tries++) {
    kevo_shape sh;
    size_t h = out->nheld, top = np == 0 ? 0 : np == 1 ? h : (first + h) % np + 1;
    if (kevo_recipe_draw_shape(r, &rng, HELD_OUT_BYTES, (int)(h + 2 * top), &sh, NULL)) break;
    int dup = 0;
    for (size_t j = 0; j < out->n && !dup; j++)
      dup = !strcmp(out->s[j].label, sh.label);
    if (dup) {
      kevo_shape_free(&sh);
      continue;
    }
    out->s[out->n++] = sh;
    out->nheld++;
  }
}

void eval_shapes_free(eval_shapes *sh) {
  for (size_t i = sh->n - sh->nheld; i < sh->n; i++)
    kevo_shape_free(&sh->s[i]);
  sh->n -= sh->nheld;
  sh->nheld = 0;
}

static void add_init(cJSON *o, const char *name, const kevo_init *in, const kevo_shape *sh);

static double expr_at(const char *expr, const kevo_shape *sh, double def) {
  double v;
  kevo_error e;
  if (!expr || kevo_expr_eval(expr, sh, &v, &e) != KEVO_OK) return def;
  return v;
}

/* The request's recipe part: tensors, shapes (label, params, numel, dims, init), verify,
 * bench, cost. */
int eval_build_request(const kevo_recipe *r, const eval_shapes *shs, const eval_config *cfg,
                       uint64_t seed, double race_ms, cJSON *req, int ncand, kevo_error *err) {
  cJSON_AddStringToObject(req, "op", "evaluate");
  cJSON *mods = cJSON_AddArrayToObject(req, "modules");
  for (int i = 0; i <= ncand; i++) { /* the candidate's modules, then the reference */
    cJSON *m = cJSON_CreateObject();
    cJSON_AddNumberToObject(m, "blob", i);
    cJSON_AddStringToObject(m, "role", i < ncand ? "candidate" : "reference");
    cJSON_AddItemToArray(mods, m);
  }
  static const char *const init_kinds[] = {"normal", "uniform", "randint"};
  static const double init_def[][2] = {{0, 1}, {-1, 1}, {0, 100}};
  cJSON *tensors = cJSON_AddArrayToObject(req, "tensors");
  for (size_t t = 0; t < r->ntensors; t++) {
    const kevo_tensor *tn = &r->tensors[t];
    cJSON *tj = cJSON_CreateObject();
    cJSON_AddStringToObject(tj, "name", tn->name);
    cJSON_AddStringToObject(tj, "dtype", kevo_dtype_name(tn->dtype));
    cJSON_AddStringToObject(tj, "role", tn->role == KEVO_ROLE_INPUT ? "input" : "output");
    if (tn->role == KEVO_ROLE_INPUT) {
      cJSON *in = cJSON_AddObjectToObject(tj, "init");
      cJSON_AddStringToObject(in, "kind", init_kinds[tn->init.kind]);
      cJSON_AddNumberToObject(in, "a",
                              expr_at(tn->init.a, &r->shapes[0], init_def[tn->init.kind][0]));
      cJSON_AddNumberToObject(in, "b",
                              expr_at(tn->init.b, &r->shapes[0], init_def[tn->init.kind][1]));
    }
    cJSON_AddItemToArray(tensors, tj);
  }
  cJSON *shapes = cJSON_AddArrayToObject(req, "shapes");
  for (size_t s = 0; s < shs->n; s++) {
    const kevo_shape *sh = &shs->s[s];
    cJSON *sj = cJSON_CreateObject();
    cJSON_AddItemToArray(shapes, sj);
    cJSON_AddStringToObject(sj, "label", sh->label);
    if (s >= shs->n - shs->nheld) cJSON_AddBoolToObject(sj, "held_out", 1);
    cJSON *stress = r->nstress ? cJSON_AddArrayToObject(sj, "stress") : NULL;
    for (size_t j = 0; j < r->nstress; j++) {
      cJSON *one = cJSON_CreateObject();
      cJSON_AddItemToArray(stress, one);
      for (size_t i = 0; i < r->stress[j].n; i++)
        add_init(one, r->tensors[r->stress[j].inits[i].tensor].name, &r->stress[j].inits[i].init,
                 sh);
    }
    cJSON *params = cJSON_AddObjectToObject(sj, "params");
    for (size_t i = 0; i < sh->nparams; i++)
      cJSON_AddNumberToObject(params, sh->params[i].name, (double)sh->params[i].value);
    cJSON *numel = cJSON_AddObjectToObject(sj, "numel");
    cJSON *dims = cJSON_AddObjectToObject(sj, "dims");
    cJSON *init = cJSON_AddObjectToObject(sj, "init");
    for (size_t t = 0; t < r->ntensors; t++) {
      const kevo_tensor *tn = &r->tensors[t];
      int64_t n;
      int rc = kevo_tensor_numel(tn, sh, &n, err);
      if (rc) return kevo_fail_prefix(err, "tensor %s at shape %s: ", tn->name, sh->label);
      if (n <= 0)
        return kevo_fail(err, KEVO_E_RECIPE, "tensor %s has %lld elements at shape %s", tn->name,
                         (long long)n, sh->label);
      cJSON_AddNumberToObject(numel, tn->name, (double)n);
      cJSON *d = cJSON_AddArrayToObject(dims, tn->name);
      for (size_t k = 0; k < tn->rank; k++)
        cJSON_AddItemToArray(d, cJSON_CreateNumber(expr_at(tn->dims[k], sh, 0)));
      if (tn->role == KEVO_ROLE_INPUT) add_init(init, tn->name, &tn->init, sh);
    }
  }
  cJSON *verify = cJSON_AddObjectToObject(req, "verify");
  cJSON_AddNumberToObject(verify, "trials",
                          cfg->trials < EVAL_MIN_TRIALS ? EVAL_MIN_TRIALS : cfg->trials);
  if (seed) cJSON_AddNumberToObject(verify, "seed", (double)(seed & ((1ull << 53) - 1)));
  cJSON *tol = cJSON_AddObjectToObject(verify, "tolerance");
  for (size_t t = 0; t < r->ntensors; t++) {
    kevo_tolerance tl = kevo_recipe_tolerance(r, r->tensors[t].dtype);
    const char *dn = kevo_dtype_name(r->tensors[t].dtype);
    if (cJSON_GetObjectItem(tol, dn)) continue;
    cJSON *o = cJSON_AddObjectToObject(tol, dn);
    cJSON_AddNumberToObject(o, "atol", tl.atol);
    cJSON_AddNumberToObject(o, "rtol", tl.rtol);
  }
  cJSON *bench = cJSON_AddObjectToObject(req, "bench");
  cJSON_AddBoolToObject(bench, "enabled", cfg->bench);
  cJSON_AddNumberToObject(bench, "warmup_ms", 25);
  cJSON_AddNumberToObject(bench, "max_ms", 1500);
  /* The worker checks every rep's output (checksum against the verified output), so a kernel
   * that changes its answer after N calls is caught in whichever rep it does it; the minimum
   * is for a steady median, the rse target decides the rest. */
  cJSON_AddNumberToObject(bench, "min_reps", 10);
  cJSON_AddNumberToObject(bench, "max_reps", 2000);
  cJSON_AddNumberToObject(bench, "target_rse", 0.01);
  cJSON_AddBoolToObject(bench, "l2_flush", 1);
  if (race_ms > 0) cJSON_AddNumberToObject(bench, "race_ms", race_ms);
  cJSON *cost = cJSON_AddObjectToObject(req, "cost");
  cJSON_AddNumberToObject(cost, "bytes", expr_at(r->cost_bytes, &r->shapes[0], 0));
  cJSON_AddNumberToObject(cost, "flops", expr_at(r->cost_flops, &r->shapes[0], 0));
  return KEVO_OK;
}

/* o[name] = {kind, a, b}: init `in` evaluated at shape sh. */
static void add_init(cJSON *o, const char *name, const kevo_init *in, const kevo_shape *sh) {
  static const char *const kinds[] = {"normal", "uniform", "randint"};
  static const double dflt[][2] = {{0, 1}, {-1, 1}, {0, 100}};
  cJSON *j = cJSON_AddObjectToObject(o, name);
  cJSON_AddStringToObject(j, "kind", kinds[in->kind]);
  cJSON_AddNumberToObject(j, "a", expr_at(in->a, sh, dflt[in->kind][0]));
  cJSON_AddNumberToObject(j, "b", expr_at(in->b, sh, dflt[in->kind][1]));
}

void eval_device_of(const cJSON *dev, launch_device *out) {
  memset(out, 0, sizeof *out);
  if (!dev) return;
  out->name = cJSON_GetStringValue(cJSON_GetObjectItem(dev, "name"));
  if (!out->name) out->name = "GPU";
  const cJSON *sms = cJSON_GetObjectItem(dev, "sms");
  out->sms = cJSON_IsNumber(sms) ? sms->valueint : 0;
  const cJSON *cc = cJSON_GetObjectItem(dev, "cc");
  out->cc_major =
      cJSON_IsNumber(cJSON_GetArrayItem(cc, 0)) ? cJSON_GetArrayItem(cc, 0)->valueint : 0;
  out->cc_minor =
      cJSON_IsNumber(cJSON_GetArrayItem(cc, 1)) ? cJSON_GetArrayItem(cc, 1)->valueint : 0;
}

/* Copies the worker's reply into res, and fills what it leaves out (speedup, roofline). */
void eval_merge_reply(cJSON *res, const cJSON *reply, const cJSON *dev) {
  const cJSON *it;
  cJSON_ArrayForEach(it, reply) {
    if (!strcmp(it->string, "id") || !strcmp(it->string, "blobs") || !strcmp(it->string, "compile"))
      continue;
    cJSON_DeleteItemFromObject(res, it->string);
    cJSON_AddItemToObject(res, it->string, cJSON_Duplicate(it, 1));
  }
  const char *verdict = cJSON_GetStringValue(cJSON_GetObjectItem(res, "verdict"));
  if (!verdict) {
    cJSON_DeleteItemFromObject(res, "ok");
    cJSON_DeleteItemFromObject(res, "verdict");
    cJSON_DeleteItemFromObject(res, "stage");
    cJSON_DeleteItemFromObject(res, "message");
    cJSON_AddBoolToObject(res, "ok", 0);
    cJSON_AddStringToObject(res, "verdict", "error");
    cJSON_AddStringToObject(res, "stage", "verify");
    cJSON_AddStringToObject(res, "message", "the worker's reply has no verdict");
    return;
  }
  cJSON_DeleteItemFromObject(res, "ok");
  cJSON_AddBoolToObject(res, "ok", !strcmp(verdict, "ok"));
  if (!cJSON_IsString(cJSON_GetObjectItem(res, "message")))
    cJSON_AddStringToObject(res, "message", verdict);
  if (!cJSON_IsString(cJSON_GetObjectItem(res, "stage")))
    cJSON_AddStringToObject(res, "stage", !strcmp(verdict, "ok") ? "done" : "verify");
  cJSON *bench = cJSON_GetObjectItem(res, "bench");
  if (!cJSON_IsObject(bench)) return;
  double med = cJSON_GetNumberValue(cJSON_GetObjectItem(bench, "median_ms"));
  double ref = cJSON_GetNumberValue(cJSON_GetObjectItem(bench, "ref_median_ms"));
  if (!cJSON_GetObjectItem(bench, "speedup") && med > 0 && ref > 0)
    cJSON_AddNumberToObject(bench, "speedup", ref / med);
  double gbps = cJSON_GetNumberValue(cJSON_GetObjectItem(bench, "gbps"));
  double peak = cJSON_GetNumberValue(cJSON_GetObjectItem(dev, "copy_gbps"));
  if (!cJSON_GetObjectItem(bench, "roofline_pct") && gbps > 0 && peak > 0)
    cJSON_AddNumberToObject(bench, "roofline_pct", 100.0 * gbps / peak);
}
