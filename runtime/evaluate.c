#include "evaluate.h"

#include "buf.h"
#include "launch.h"
#include "sha256.h"
#include "torchref.h"

#include <cjson/cJSON.h>

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LOG_CAP = 8192, MIN_TRIALS = 5 };
#define DEFAULT_DEADLINE_S 120.0

struct evaluator {
  kevo_recipe *recipe;
  evalclient *client;
  eval_config cfg;
  char arch[32];
  /* the reference, compiled once */
  int ref_done, ref_rc;
  cuda_module *ref_mod;
  kevo_error ref_err;
  kevo_buf ref_src;
  /* a PyTorch reference (KernelBench problem): the bridge, its key, its baseline times */
  torchref *torch;
  char torch_key[80];
  cJSON *torch_base;
};

int evaluator_new(kevo_recipe *recipe, const evalclient_opts *wopts, const eval_config *cfg,
                  evaluator **out, kevo_error *err) {
  *out = NULL;
  if (!recipe) return kevo_fail(err, KEVO_E_ARG, "evaluator_new: no recipe");
  evaluator *ev = calloc(1, sizeof *ev);
  if (!ev) return kevo_fail(err, KEVO_E_NOMEM, "no memory for an evaluator");
  int rc = evalclient_new(wopts, &ev->client, err);
  if (rc) {
    free(ev);
    return rc;
  }
  ev->recipe = recipe;
  ev->cfg = cfg ? *cfg : (eval_config){.bench = 1, .seed = 1};
  if (!cfg) ev->cfg.trials = MIN_TRIALS;
  kevo_buf_init(&ev->ref_src, 16 << 20);
  *out = ev;
  return KEVO_OK;
}

void evaluator_free(evaluator *ev) {
  if (!ev) return;
  evalclient_free(ev->client);
  cuda_module_free(ev->ref_mod);
  torchref_close(ev->torch);
  cJSON_Delete(ev->torch_base);
  kevo_buf_free(&ev->ref_src);
  kevo_recipe_free(ev->recipe);
  free(ev);
}

const kevo_recipe *evaluator_recipe(const evaluator *ev) {
  return ev->recipe;
}

eval_config *evaluator_config(evaluator *ev) {
  return &ev->cfg;
}

evalclient_stats evaluator_worker_stats(const evaluator *ev) {
  return evalclient_get_stats(ev->client);
}

int evaluator_device(evaluator *ev, const cJSON **device, kevo_error *err) {
  return evalclient_device(ev->client, device, err);
}

/* NVRTC wants a bare file name for diagnostics. */
static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static const char *arch_of(evaluator *ev) {
  return ev->cfg.arch ? ev->cfg.arch : cuda_default_arch();
}

/* ---- result shaping ---- */

__attribute__((format(printf, 4, 5))) static void
set_verdict(cJSON *res, const char *verdict, const char *stage, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  for (char *p = msg; *p; p++) /* one line */
    if (*p == '\n') *p = ' ';
  cJSON_DeleteItemFromObject(res, "ok");
  cJSON_DeleteItemFromObject(res, "verdict");
  cJSON_DeleteItemFromObject(res, "stage");
  cJSON_DeleteItemFromObject(res, "message");
  cJSON_AddBoolToObject(res, "ok", strcmp(verdict, "ok") == 0);
  cJSON_AddStringToObject(res, "verdict", verdict);
  cJSON_AddStringToObject(res, "stage", stage);
  cJSON_AddStringToObject(res, "message", msg);
}

static cJSON *compile_json(const cuda_module *m, const char *arch) {
  cJSON *c = cJSON_CreateObject();
  cJSON_AddNumberToObject(c, "ms", m ? m->compile_ms : 0);
  cJSON_AddBoolToObject(c, "cached", m && m->cached);
  cJSON_AddStringToObject(c, "arch", m && m->arch[0] ? m->arch : arch);
  cJSON *diags = cJSON_AddArrayToObject(c, "diagnostics");
  cJSON *kernels = cJSON_AddArrayToObject(c, "kernels");
  if (!m) return c;
  for (size_t i = 0; i < m->ndiags; i++) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddNumberToObject(d, "line", m->diags[i].line);
    cJSON_AddNumberToObject(d, "col", m->diags[i].col);
    cJSON_AddStringToObject(d, "severity", m->diags[i].severity);
    cJSON_AddStringToObject(d, "message", m->diags[i].message ? m->diags[i].message : "");
    cJSON_AddItemToArray(diags, d);
  }
  if (m->log) {
    size_t n = strlen(m->log);
    if (n > LOG_CAP) {
      char *cut = strndup(m->log, LOG_CAP);
      cJSON_AddStringToObject(c, "log", cut ? cut : "");
      free(cut);
    } else {
      cJSON_AddStringToObject(c, "log", m->log);
    }
  }
  for (size_t i = 0; i < m->nkernels; i++) {
    const cuda_kernel_info *k = &m->kernels[i];
    cJSON *kj = cJSON_CreateObject();
    cJSON_AddStringToObject(kj, "name", k->name ? k->name : "");
    cJSON_AddNumberToObject(kj, "registers", k->registers);
    cJSON_AddNumberToObject(kj, "shared_static", k->shared_static);
    cJSON_AddNumberToObject(kj, "local_bytes", k->local_bytes);
    cJSON_AddNumberToObject(kj, "spill_stores", k->spill_stores);
    cJSON_AddNumberToObject(kj, "spill_loads", k->spill_loads);
    cJSON_AddItemToArray(kernels, kj);
  }
  return c;
}

static int count_errors(const cuda_module *m) {
  int n = 0;
  for (size_t i = 0; m && i < m->ndiags; i++)
    n += strcmp(m->diags[i].severity, "error") == 0;
  return n;
}

/* ---- sources and plans ---- */

/* Reads a recipe source: its path as the loader resolved it, else relative to the recipe. */
static int read_source(const kevo_recipe *r, const char *file, kevo_buf *out, kevo_error *err) {
  kevo_buf_reset(out);
  if (kevo_read_file(file, out, err) == KEVO_OK) return KEVO_OK;
  if (file[0] == '/' || !r->dir) return err->status;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", r->dir, file);
  kevo_buf_reset(out);
  return kevo_read_file(path, out, err);
}

static int compile_reference(evaluator *ev) {
  if (ev->ref_done) return ev->ref_rc;
  ev->ref_done = 1;
  const kevo_source *ref = &ev->recipe->reference;
  if (!strcmp(ref->lang, "torch")) { /* the bridge runs it (torch_request); key its outputs */
    int rc = read_source(ev->recipe, ref->file, &ev->ref_src, &ev->ref_err);
    char hex[65];
    if (!rc) kevo_sha256_hex(ev->ref_src.data, ev->ref_src.len, hex);
    if (!rc) snprintf(ev->torch_key, sizeof ev->torch_key, "torch:%s", hex);
    return ev->ref_rc = rc;
  }
  if (strcmp(ref->lang, "cuda") != 0)
    return ev->ref_rc =
               kevo_fail(&ev->ref_err, KEVO_E_UNSUPPORTED,
                         "the reference is %s; only CUDA references are built so far", ref->lang);
  int rc = read_source(ev->recipe, ref->file, &ev->ref_src, &ev->ref_err);
  if (rc) return ev->ref_rc = rc;
  cuda_compile_opts o = {.source = ev->ref_src.data,
                         .len = ev->ref_src.len,
                         .name = base_name(ref->file),
                         .arch = arch_of(ev)};
  rc = cuda_compile(&o, &ev->ref_mod, &ev->ref_err);
  if (rc == KEVO_E_COMPILE && ev->ref_mod && ev->ref_mod->ndiags)
    kevo_fail(&ev->ref_err, rc, "%s:%d: %s", ref->file, ev->ref_mod->diags[0].line,
              ev->ref_mod->diags[0].message);
  return ev->ref_rc = rc;
}

typedef struct chunk {
  const char *text;
  size_t len;
  const char *name;
  int line;
} chunk;

/* Every plan of one side (candidate or reference) for every shape into shapes[i][key]. */
static int resolve_plans(evaluator *ev, const chunk *ch, const kevo_define *knobs, size_t nknobs,
                         const launch_device *dev, int module, const cuda_module *mod,
                         cJSON *shapes, const char *key, kevo_error *err) {
  const kevo_recipe *r = ev->recipe;
  const char *names[64];
  size_t nb = r->ntensors < 64 ? r->ntensors : 64;
  for (size_t i = 0; i < nb; i++)
    names[i] = r->tensors[i].name;
  launch_param params[64];
  for (size_t s = 0; s < r->nshapes; s++) {
    const kevo_shape *sh = &r->shapes[s];
    size_t np = sh->nparams < 64 ? sh->nparams : 64;
    for (size_t i = 0; i < np; i++)
      params[i] = (launch_param){sh->params[i].name, sh->params[i].value};
    launch_env env = {.params = params,
                      .nparams = np,
                      .knobs = knobs,
                      .nknobs = nknobs,
                      .buffers = names,
                      .nbuffers = nb,
                      .device = dev,
                      .module = module};
    cJSON *plan = NULL;
    int rc = launch_resolve(ch->text, ch->len, ch->name, ch->line, &env, &plan, err);
    if (rc) return kevo_fail_prefix(err, "at shape %s: ", sh->label);
    cJSON_AddItemToObject(cJSON_GetArrayItem(shapes, (int)s), key, plan);
    if (!mod || mod->nkernels == 0) continue;
    const cJSON *k;
    cJSON_ArrayForEach(k, cJSON_GetObjectItem(plan, "kernels")) {
      const char *kn = cJSON_GetStringValue(cJSON_GetObjectItem(k, "name"));
      size_t i = 0;
      while (i < mod->nkernels && strcmp(mod->kernels[i].name, kn) != 0)
        i++;
      if (i == mod->nkernels) {
        char have[512] = "";
        for (size_t j = 0; j < mod->nkernels; j++)
          snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s", j ? ", " : "",
                   mod->kernels[j].name);
        return kevo_fail(err, KEVO_E_LAUNCH,
                         "%s:%d: kevo:launch: kernel '%s' is not in the module (it has: %s; "
                         "declare kernels extern \"C\")",
                         ch->name, ch->line, kn, have);
      }
    }
  }
  return KEVO_OK;
}

/* The knobs a launch chunk sees: those given, then the defaults the source gives itself in the
 * documented form (docs/recipes.md) `#ifndef NAME` directly followed by `#define NAME value`,
 * so a kernel compiled with its own defaults is launched with the same values. */
typedef struct knob_set {
  kevo_define d[128];
  char *owned[256];
  size_t n, nowned;
} knob_set;

static const char *skip_ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t'))
    p++;
  return p;
}

/* Parses "#<ws>word<ws>IDENT" at p; returns the end of IDENT (and IDENT) or NULL. */
static const char *directive(const char *p, const char *end, const char *word, const char **id,
                             size_t *idlen) {
  p = skip_ws(p, end);
  if (p >= end || *p != '#') return NULL;
  p = skip_ws(p + 1, end);
  size_t wl = strlen(word);
  if ((size_t)(end - p) < wl || memcmp(p, word, wl) != 0) return NULL;
  const char *q = skip_ws(p + wl, end);
  if (q == p + wl) return NULL;
  *id = q;
  while (q < end && (isalnum((unsigned char)*q) || *q == '_'))
    q++;
  *idlen = (size_t)(q - *id);
  return *idlen ? q : NULL;
}

static int knob_known(const knob_set *ks, const kevo_recipe *r, const char *name) {
  for (size_t i = 0; i < ks->n; i++)
    if (!strcmp(ks->d[i].name, name)) return 1;
  for (size_t i = 0; i < r->nparams; i++)
    if (!strcmp(r->params[i].name, name)) return 1;
  return 0;
}

static void knobs_with_defaults(const kevo_define *given, size_t ngiven, const char *src,
                                size_t len, const kevo_recipe *r, knob_set *ks) {
  ks->n = ks->nowned = 0;
  for (size_t i = 0; i < ngiven && ks->n < 128; i++)
    ks->d[ks->n++] = given[i];
  const char *p = src, *end = src + len;
  while (p && p < end && ks->n < 128 && ks->nowned + 2 <= 256) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *id, *id2, *v;
    size_t idlen, id2len;
    if (nl && directive(p, nl, "ifndef", &id, &idlen)) {
      const char *next = nl + 1, *next_end = memchr(next, '\n', (size_t)(end - next));
      if (!next_end) next_end = end;
      v = directive(next, next_end, "define", &id2, &id2len);
      if (v && idlen == id2len && !memcmp(id, id2, idlen) && idlen < 128) {
        char name[128];
        memcpy(name, id, idlen);
        name[idlen] = '\0';
        v = skip_ws(v, next_end);
        const char *vend = next_end;
        for (const char *c = v; c + 1 < next_end; c++)
          if (c[0] == '/' && (c[1] == '/' || c[1] == '*')) {
            vend = c;
            break;
          }
        while (vend > v && isspace((unsigned char)vend[-1]))
          vend--;
        if (vend > v && !knob_known(ks, r, name)) {
          char *n = strdup(name), *val = strndup(v, (size_t)(vend - v));
          if (n) ks->owned[ks->nowned++] = n;
          if (val) ks->owned[ks->nowned++] = val;
          if (n && val) ks->d[ks->n++] = (kevo_define){n, val};
        }
      }
    }
    p = nl ? nl + 1 : NULL;
  }
}

static void knob_set_free(knob_set *ks) {
  for (size_t i = 0; i < ks->nowned; i++)
    free(ks->owned[i]);
  ks->nowned = 0;
}

static double expr_at(const char *expr, const kevo_shape *sh, double def) {
  double v;
  kevo_error e;
  if (!expr || kevo_expr_eval(expr, sh, &v, &e) != KEVO_OK) return def;
  return v;
}

/* The request's recipe part: tensors, shapes (label, params, numel, dims, init), verify,
 * bench, cost. */
static int build_request(evaluator *ev, cJSON *req, kevo_error *err) {
  const kevo_recipe *r = ev->recipe;
  cJSON_AddStringToObject(req, "op", "evaluate");
  cJSON *mods = cJSON_AddArrayToObject(req, "modules");
  const char *roles[2] = {"candidate", "reference"};
  for (int i = 0; i < 2; i++) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddNumberToObject(m, "blob", i);
    cJSON_AddStringToObject(m, "role", roles[i]);
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
  for (size_t s = 0; s < r->nshapes; s++) {
    const kevo_shape *sh = &r->shapes[s];
    cJSON *sj = cJSON_CreateObject();
    cJSON_AddItemToArray(shapes, sj);
    cJSON_AddStringToObject(sj, "label", sh->label);
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
      if (tn->role == KEVO_ROLE_INPUT) {
        cJSON *in = cJSON_AddObjectToObject(init, tn->name);
        cJSON_AddStringToObject(in, "kind", init_kinds[tn->init.kind]);
        cJSON_AddNumberToObject(in, "a", expr_at(tn->init.a, sh, init_def[tn->init.kind][0]));
        cJSON_AddNumberToObject(in, "b", expr_at(tn->init.b, sh, init_def[tn->init.kind][1]));
      }
    }
  }
  cJSON *verify = cJSON_AddObjectToObject(req, "verify");
  cJSON_AddNumberToObject(verify, "trials",
                          ev->cfg.trials < MIN_TRIALS ? MIN_TRIALS : ev->cfg.trials);
  cJSON_AddNumberToObject(verify, "seed", (double)(ev->cfg.seed & ((1ull << 53) - 1)));
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
  cJSON_AddBoolToObject(bench, "enabled", ev->cfg.bench);
  cJSON_AddNumberToObject(bench, "warmup_ms", 25);
  cJSON_AddNumberToObject(bench, "max_ms", 1500);
  /* Many reps: a kernel honest only for its first N calls must meet its N+1st in the loop
   * (the worker checks the outputs after it), and the median gets steadier. */
  cJSON_AddNumberToObject(bench, "min_reps", 50);
  cJSON_AddNumberToObject(bench, "max_reps", 2000);
  cJSON_AddNumberToObject(bench, "target_rse", 0.01);
  cJSON_AddBoolToObject(bench, "l2_flush", 1);
  cJSON *cost = cJSON_AddObjectToObject(req, "cost");
  cJSON_AddNumberToObject(cost, "bytes", expr_at(r->cost_bytes, &r->shapes[0], 0));
  cJSON_AddNumberToObject(cost, "flops", expr_at(r->cost_flops, &r->shapes[0], 0));
  return KEVO_OK;
}

/* ---- judging ---- */

static void device_of(const cJSON *dev, launch_device *out) {
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
static void merge_reply(cJSON *res, const cJSON *reply, const cJSON *dev) {
  const cJSON *it;
  cJSON_ArrayForEach(it, reply) {
    if (!strcmp(it->string, "id") || !strcmp(it->string, "blobs") || !strcmp(it->string, "compile"))
      continue;
    cJSON_DeleteItemFromObject(res, it->string);
    cJSON_AddItemToObject(res, it->string, cJSON_Duplicate(it, 1));
  }
  const char *verdict = cJSON_GetStringValue(cJSON_GetObjectItem(res, "verdict"));
  if (!verdict) {
    set_verdict(res, "error", "verify", "the worker's reply has no verdict");
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

/* ---- a PyTorch reference (docs/kbench.md) ---- */

typedef struct torch_ctx {
  evaluator *ev;
  double deadline;
} torch_ctx;

static int torch_worker(void *ctx, cJSON *req, const kevo_blob *blobs, size_t n, kevo_frame *reply,
                        kevo_error *err) {
  torch_ctx *c = ctx;
  return evalclient_request(c->ev->client, req, blobs, n, c->deadline, reply, err);
}

/* Sends req with an external reference; when the worker lacks reference outputs the bridge
 * computes them on the worker's own inputs (torchref_supply) and req goes again. After a
 * timed ok, adds eager and torch.compile times measured once per evaluator. */
static int torch_request(evaluator *ev, cJSON *req, const cuda_module *cm, double deadline,
                         kevo_frame *reply, kevo_error *err) {
  torch_ctx ctx = {ev, deadline};
  kevo_blob blob = {cm->cubin, cm->cubin_size};
  torchref_make_external(req, ev->torch_key);
  int rc = evalclient_request(ev->client, req, &blob, 1, deadline, reply, err);
  const cJSON *missing = rc ? NULL : cJSON_GetObjectItem(reply->header, "missing");
  if (missing) {
    if (!ev->torch && (rc = torchref_open(ev->recipe->reference.file, NULL, &ev->torch, err))) {
      kevo_frame_free(reply);
      return kevo_fail_prefix(err, "the PyTorch reference: ");
    }
    rc = torchref_supply(ev->torch, torch_worker, &ctx, req, missing, err);
    kevo_frame_free(reply);
    if (rc) return rc;
    rc = evalclient_request(ev->client, req, &blob, 1, deadline, reply, err);
  }
  cJSON *bench = rc ? NULL : cJSON_GetObjectItem(reply->header, "bench");
  if (!bench) return rc;
  if (!ev->torch_base &&
      ((!ev->torch && torchref_open(ev->recipe->reference.file, NULL, &ev->torch, err)) ||
       torchref_baseline(ev->torch, torch_worker, &ctx, req, &ev->torch_base, err))) {
    ev->torch_base = cJSON_CreateObject();
    cJSON_AddStringToObject(ev->torch_base, "error", err->msg);
  }
  torchref_add_baseline(bench, ev->torch_base);
  return KEVO_OK;
}

/* Judges one candidate whose compilation (if CUDA) is done: cm, crc, cerr as cuda_compile left
 * them. Always returns a result (NULL only out of memory). */
static cJSON *judge(evaluator *ev, const eval_candidate *cand, cuda_module *cm, int crc,
                    const kevo_error *cerr) {
  cJSON *res = cJSON_CreateObject();
  if (!res) return NULL;
  set_verdict(res, "error", "compile", "not judged");
  const char *name = cand->name ? cand->name : "candidate.cu";
  cJSON_AddItemToObject(res, "compile", compile_json(cm, arch_of(ev)));
  kevo_error err = {0};
  cJSON *req = NULL;

  if (!strcmp(cand->lang, "triton")) {
    set_verdict(res, "error", "compile",
                "Triton path not built yet: this build judges CUDA candidates only");
    goto done;
  }
  if (crc == KEVO_E_COMPILE || (cm && !cm->ok)) {
    int n = count_errors(cm);
    const cuda_diag *d = NULL;
    for (size_t i = 0; cm && i < cm->ndiags && !d; i++)
      if (!strcmp(cm->diags[i].severity, "error")) d = &cm->diags[i];
    if (d)
      set_verdict(res, "compile_error", "compile", "%d error%s; first: %s:%d:%d: %s", n,
                  n == 1 ? "" : "s", name, d->line, d->col, d->message);
    else
      set_verdict(res, "compile_error", "compile", "%s",
                  cerr->msg[0] ? cerr->msg : "did not compile");
    goto done;
  }
  if (crc || !cm) {
    set_verdict(res, "error", "compile", "compiling failed: %s: %s", kevo_code(crc), cerr->msg);
    goto done;
  }
  if (compile_reference(ev)) {
    set_verdict(res, "error", "compile", "the recipe's reference does not build: %s",
                ev->ref_err.msg);
    goto done;
  }

  const cJSON *dev = NULL;
  int drc = evaluator_device(ev, &dev, &err);
  char nogpu[1024] = "";
  if (drc == KEVO_E_NOGPU) {
    snprintf(nogpu, sizeof nogpu, "%s", err.msg);
  } else if (drc) {
    set_verdict(res, "error", "verify", "%s", err.msg);
    goto done;
  } else {
    cJSON *d = cJSON_AddObjectToObject(res, "device");
    cJSON_AddItemToObject(d, "name", cJSON_Duplicate(cJSON_GetObjectItem(dev, "name"), 1));
    cJSON_AddItemToObject(d, "cc", cJSON_Duplicate(cJSON_GetObjectItem(dev, "cc"), 1));
    cJSON_AddItemToObject(d, "copy_gbps",
                          cJSON_Duplicate(cJSON_GetObjectItem(dev, "copy_gbps"), 1));
  }
  launch_device ld;
  device_of(dev, &ld);

  req = cJSON_CreateObject();
  cJSON_AddStringToObject(req, "name", name);
  if (build_request(ev, req, &err)) {
    set_verdict(res, "error", "compile", "the recipe: %s", err.msg);
    goto done;
  }
  chunk cc = {cand->launch, cand->launch ? strlen(cand->launch) : 0,
              cand->launch_name ? cand->launch_name : "launch",
              cand->launch_line > 0 ? cand->launch_line : 1};
  if (!cand->launch) {
    launch_block b;
    if (launch_extract(cand->lang, cand->source, cand->len, &b, &err)) {
      set_verdict(res, "launch_error", "compile", "%s: %s", name, err.msg);
      goto done;
    }
    cc = (chunk){b.text, b.len, name, b.line};
  }
  cJSON *shapes = cJSON_GetObjectItem(req, "shapes");
  knob_set ks;
  knobs_with_defaults(cand->knobs, cand->nknobs, cand->source, cand->len, ev->recipe, &ks);
  int lrc = resolve_plans(ev, &cc, ks.d, ks.n, dev ? &ld : NULL, 0, cm, shapes, "candidate", &err);
  knob_set_free(&ks);
  if (lrc && !(lrc == KEVO_E_NOGPU && nogpu[0])) {
    set_verdict(res, "launch_error", "compile", "%s", err.msg);
    goto done;
  }
  if (nogpu[0]) {
    set_verdict(res, "no_gpu", "verify", "verification needs a GPU: %s", nogpu);
    goto done;
  }
  kevo_frame reply;
  evalclient_stats before = evalclient_get_stats(ev->client);
  double deadline = ev->cfg.deadline_s > 0 ? ev->cfg.deadline_s : DEFAULT_DEADLINE_S;
  int wrc;
  if (ev->torch_key[0]) {
    wrc = torch_request(ev, req, cm, deadline, &reply, &err);
    goto judged;
  }
  const kevo_source *ref = &ev->recipe->reference;
  chunk rc_chunk = {ref->launch, ref->launch ? strlen(ref->launch) : 0, ev->recipe->path,
                    ref->launch_line};
  if (!ref->launch) {
    launch_block b;
    if (launch_extract(ref->lang, ev->ref_src.data, ev->ref_src.len, &b, &err)) {
      set_verdict(res, "error", "compile", "the recipe's reference: %s: %s", ref->file, err.msg);
      goto done;
    }
    rc_chunk = (chunk){b.text, b.len, ref->file, b.line};
  }
  knobs_with_defaults(NULL, 0, ev->ref_src.data, ev->ref_src.len, ev->recipe, &ks);
  lrc = resolve_plans(ev, &rc_chunk, ks.d, ks.n, &ld, 1, ev->ref_mod, shapes, "reference", &err);
  knob_set_free(&ks);
  if (lrc) {
    set_verdict(res, "error", "compile", "the recipe's reference launch: %s", err.msg);
    goto done;
  }

  kevo_blob blobs[2] = {{cm->cubin, cm->cubin_size}, {ev->ref_mod->cubin, ev->ref_mod->cubin_size}};
  wrc = evalclient_request(ev->client, req, blobs, 2, deadline, &reply, &err);
judged:
  if (wrc == KEVO_E_TIMEOUT) {
    set_verdict(res, "timeout", "verify",
                "no result within %.0f s: the kernel probably never finishes (the worker was "
                "killed and replaced)",
                deadline);
  } else if (wrc == KEVO_E_WORKER && evalclient_get_stats(ev->client).deaths > before.deaths) {
    set_verdict(res, "crash", "verify", "%s: the kernel took the worker down with it", err.msg);
  } else if (wrc) {
    set_verdict(res, "error", "verify", "%s", err.msg);
  } else {
    merge_reply(res, reply.header, dev);
    kevo_frame_free(&reply);
  }

done:
  cJSON_Delete(req);
  char *fb = eval_feedback(res, cand->source, cand->len);
  cJSON_AddStringToObject(res, "feedback", fb ? fb : "");
  free(fb);
  return res;
}

static void compile_opts_of(evaluator *ev, const eval_candidate *c, cuda_compile_opts *o) {
  *o = (cuda_compile_opts){.source = c->source,
                           .len = c->len,
                           .name = base_name(c->name ? c->name : "candidate.cu"),
                           .arch = arch_of(ev),
                           .defines = c->knobs,
                           .ndefines = c->nknobs};
}

static int check_candidate(const eval_candidate *c, kevo_error *err) {
  if (!c->lang || (strcmp(c->lang, "cuda") && strcmp(c->lang, "triton")))
    return kevo_fail(err, KEVO_E_ARG, "lang must be \"cuda\" or \"triton\", got '%s'",
                     c->lang ? c->lang : "(none)");
  if (!c->source) return kevo_fail(err, KEVO_E_ARG, "a candidate needs a source");
  return KEVO_OK;
}

int evaluator_run(evaluator *ev, const eval_candidate *cand, cJSON **result, kevo_error *err) {
  return evaluator_run_many(ev, cand, 1, result, err);
}

int evaluator_run_many(evaluator *ev, const eval_candidate *cands, size_t n, cJSON **results,
                       kevo_error *err) {
  for (size_t i = 0; i < n; i++) {
    results[i] = NULL;
    if (check_candidate(&cands[i], err)) return kevo_fail_prefix(err, "candidate %zu: ", i + 1);
  }
  cuda_compile_opts *opts = calloc(n ? n : 1, sizeof *opts);
  size_t *which = calloc(n ? n : 1, sizeof *which);
  cuda_module **mods = calloc(n ? n : 1, sizeof *mods);
  int *rcs = calloc(n ? n : 1, sizeof *rcs);
  kevo_error *errs = calloc(n ? n : 1, sizeof *errs);
  int rc = KEVO_OK;
  if (!opts || !which || !mods || !rcs || !errs) {
    rc = kevo_fail(err, KEVO_E_NOMEM, "no memory for %zu candidates", n);
    goto out;
  }
  size_t ncuda = 0;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(cands[i].lang, "cuda")) {
      compile_opts_of(ev, &cands[i], &opts[ncuda]);
      which[ncuda++] = i;
    }
  if (ncuda == 1)
    rcs[0] = cuda_compile(&opts[0], &mods[0], &errs[0]);
  else if (ncuda > 1)
    cuda_compile_many(opts, ncuda, mods, rcs, errs);
  for (size_t i = 0, k = 0; i < n; i++) {
    int is_cuda = k < ncuda && which[k] == i;
    cuda_module *m = is_cuda ? mods[k] : NULL;
    int crc = is_cuda ? rcs[k] : KEVO_OK;
    kevo_error none = {0};
    results[i] = judge(ev, &cands[i], m, crc, is_cuda ? &errs[k] : &none);
    if (is_cuda) k++;
    if (!results[i]) {
      rc = kevo_fail(err, KEVO_E_NOMEM, "no memory for a result");
      break;
    }
  }
  for (size_t k = 0; k < ncuda; k++)
    cuda_module_free(mods[k]);
out:
  free(opts);
  free(which);
  free(mods);
  free(rcs);
  free(errs);
  return rc;
}
