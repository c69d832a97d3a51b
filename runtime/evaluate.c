#include "evaluate.h"

#include "buf.h"
#include "eval_deadline.h"
#include "eval_pool.h"
#include "eval_profile_batch.h"
#include "eval_request.h"
#include "eval_result.h"
#include "eval_triton.h"
#include "launch.h"
#include "recipe_knobs.h"
#include "sha256.h"
#include "torchref.h"
#include "triton.h"

#include <cjson/cJSON.h>

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { LOG_CAP = 8192 };

/* What the evaluator keeps per worker of its pool: a PyTorch reference's bridge runs on that
 * worker's GPU, so eager and torch.compile are timed where the candidate is. */
typedef struct eval_slot {
  eval_transport *t;
  torchref *torch;
  cJSON *torch_base;
} eval_slot;

struct evaluator {
  kevo_recipe *recipe;
  eval_pool *pool;
  eval_slot *slots; /* one per transport of the pool */
  size_t nslots;
  eval_config cfg;
  char arch[32];
  /* the reference, compiled once */
  int ref_done, ref_rc;
  cuda_module *ref_mod;
  kevo_error ref_err;
  kevo_buf ref_src;
  /* the Triton compile servers, started on the first Triton candidate */
  triton_pool *tp;
  int tp_rc;
  kevo_error tp_err;
  /* a PyTorch reference (KernelBench problem): its key (the bridges are per slot) */
  char torch_key[80];
  uint64_t session_seed; /* secret (getrandom): the external reference's inputs */
  pthread_mutex_t mu;    /* guards incumbent_ms: the pool's threads judge at once */
  double incumbent_ms;   /* the fastest median of an ok candidate timed in full so far */
  double ref_ms;         /* the reference's longest measured time so far (for deadlines) */
  /* profile mode (evaluator_profile_many): judge hands its request to this batch */
  profbatch *prof;
  int standby_asked; /* evaluator_profile_prepare was sent */
};

int evaluator_new(kevo_recipe *recipe, const evalclient_opts *wopts, const eval_config *cfg,
                  evaluator **out, kevo_error *err) {
  *out = NULL;
  eval_pool *pool = NULL;
  eval_transport *t = NULL;
  int rc = eval_pool_new(&pool, err);
  if (!rc) rc = eval_transport_local(wopts, wopts ? wopts->gpu : NULL, &t, err);
  if (!rc) rc = eval_pool_add(pool, t, err);
  if (rc) {
    eval_pool_free(pool);
    return rc;
  }
  return evaluator_new_pool(recipe, pool, cfg, out, err);
}

int evaluator_new_pool(kevo_recipe *recipe, eval_pool *pool, const eval_config *cfg,
                       evaluator **out, kevo_error *err) {
  *out = NULL;
  if (!recipe || !pool || !eval_pool_size(pool)) {
    eval_pool_free(pool);
    return kevo_fail(err, KEVO_E_ARG, "evaluator_new: no recipe or no worker");
  }
  evaluator *ev = calloc(1, sizeof *ev);
  eval_slot *slots = calloc(eval_pool_size(pool), sizeof *slots);
  if (!ev || !slots) {
    free(ev), free(slots);
    eval_pool_free(pool);
    return kevo_fail(err, KEVO_E_NOMEM, "no memory for an evaluator");
  }
  ev->pool = pool;
  ev->slots = slots;
  ev->nslots = eval_pool_size(pool);
  for (size_t i = 0; i < ev->nslots; i++)
    slots[i].t = eval_pool_at(pool, i);
  pthread_mutex_init(&ev->mu, NULL);
  ev->recipe = recipe;
  ev->cfg = cfg ? *cfg : EVAL_CONFIG_DEFAULT;
  ev->session_seed = eval_secret64() | 1; /* never 0, which means "the worker draws one" */
  kevo_buf_init(&ev->ref_src, KEVO_TEXT_FILE_CAP);
  *out = ev;
  return KEVO_OK;
}

void evaluator_free(evaluator *ev) {
  if (!ev) return;
  for (size_t i = 0; i < ev->nslots; i++) {
    torchref_close(ev->slots[i].torch);
    cJSON_Delete(ev->slots[i].torch_base);
  }
  free(ev->slots);
  eval_pool_release(ev->pool); /* a kept pool waits for the next evaluator */
  pthread_mutex_destroy(&ev->mu);
  cuda_module_free(ev->ref_mod);
  triton_pool_free(ev->tp);
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
  return eval_pool_stats(ev->pool);
}

int evaluator_device(evaluator *ev, const cJSON **device, kevo_error *err) {
  return eval_pool_devices(ev->pool, device, err);
}

/* The pool grown by the workers that joined since the last batch (eval_pool_grow), and a slot
 * for each new one. A pool that cannot grow now keeps the slots it has: not an error. */
static void grow_slots(evaluator *ev) {
  kevo_error err = {0};
  if (eval_pool_grow(ev->pool, &err)) return;
  size_t n = eval_pool_size(ev->pool);
  if (n <= ev->nslots) return;
  eval_slot *s = realloc(ev->slots, n * sizeof *s);
  if (!s) return; /* the pool's extra transports stay unused */
  memset(s + ev->nslots, 0, (n - ev->nslots) * sizeof *s);
  for (size_t i = ev->nslots; i < n; i++)
    s[i].t = eval_pool_at(ev->pool, i);
  ev->slots = s;
  ev->nslots = n;
}

size_t evaluator_workers(const evaluator *ev) {
  return ev->nslots;
}

/* NVRTC wants a bare file name for diagnostics. */
/* Seconds on CLOCK_MONOTONIC, the clock of eval_config.start_by (and of kevo.clock). */
static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int past(double start_by) {
  return start_by > 0 && mono_s() >= start_by;
}

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
  cJSON *warn = cJSON_AddArrayToObject(c, "warnings"); /* class 11: docs/worker.md */
  for (int i = 0; i < CUDA_ART_COUNT; i++)
    if (m->artifacts & (1u << i))
      cJSON_AddItemToArray(warn, cJSON_CreateString(cuda_artifact_text(i)));
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
    char hex[KEVO_HASH_HEX];
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
  const char *lang; /* of the source it launches */
} chunk;

/* Every plan of one side (candidate or reference) for the first nshapes shapes into
 * shapes[i][key]. */
static int resolve_plans(const kevo_recipe *r, const kevo_shape *shapes_at, size_t nshapes,
                         const chunk *ch, const kevo_define *knobs, size_t nknobs,
                         const launch_device *dev, int module, const cuda_module *mod,
                         cJSON *shapes, const char *key, kevo_error *err) {
  const char *names[KEVO_PROTO_MAX_TENSORS];
  size_t nb = r->ntensors;
  if (nb > KEVO_PROTO_MAX_TENSORS)
    return kevo_fail(err, KEVO_E_RECIPE,
                     "recipe %s has %zu tensors (inputs and outputs); the worker takes at most %d",
                     r->name, nb, KEVO_PROTO_MAX_TENSORS);
  for (size_t i = 0; i < nb; i++)
    names[i] = r->tensors[i].name;
  launch_param params[64];
  for (size_t s = 0; s < nshapes; s++) {
    const kevo_shape *sh = &shapes_at[s];
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
                      .module = module,
                      .block_optional = !strcmp(ch->lang, "triton")};
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

/* ---- judging ---- */

/* What compiling one candidate left: a CUDA module, or a Triton candidate's jobs (prepared
 * from its launch chunk at the benchmark shape, then compiled), or why it could not be. */
typedef struct built {
  cuda_module *cm;
  int crc;
  kevo_error cerr;
  evtri_prep tp;
  const char *pverdict; /* Triton preparation failed with this verdict (launch_error, no_gpu) */
  kevo_error perr;
  int late; /* LATE_UNSTARTED or LATE_COMPILING: not judged (the batch's start_by passed) */
} built;
/* Why a candidate is not judged under a batch's start_by (kevo run's --time): it was not begun
 * by then, or its compile was still under way then and was cut there (a compile, NVRTC's or
 * Triton's, gets what is left before start_by and no more: its candidate could not be judged
 * after it anyway). */
enum { LATE_UNSTARTED = 1, LATE_COMPILING = 2 };

/* A compile that failed with KEVO_E_TIMEOUT once start_by has passed was cut by it: late. */
static int cut_by(double start_by, int rc) {
  return rc == KEVO_E_TIMEOUT && start_by > 0 && mono_s() >= start_by;
}

static const char *dtype_of(const char *name, void *ud) {
  const kevo_recipe *r = ud;
  for (size_t i = 0; i < r->ntensors; i++)
    if (!strcmp(r->tensors[i].name, name)) return kevo_dtype_name(r->tensors[i].dtype);
  return "u8"; /* a scratch buffer (the launch checked the name): untyped bytes, a Triton kernel
                  casts the pointer (ptr.to(tl.pointer_type(tl.float32))) */
}

/* The candidate's launch chunk: the given one, else the source's kevo:launch block. */
static int candidate_chunk(const eval_candidate *cand, const char *name, chunk *out,
                           kevo_error *err) {
  *out = (chunk){cand->launch, cand->launch ? strlen(cand->launch) : 0,
                 cand->launch_name ? cand->launch_name : "launch",
                 cand->launch_line > 0 ? cand->launch_line : 1, cand->lang};
  if (cand->launch) return KEVO_OK;
  launch_block b;
  if (launch_extract(cand->lang, cand->source, cand->len, &b, err))
    return kevo_fail_prefix(err, "%s: ", name);
  *out = (chunk){b.text, b.len, name, b.line, cand->lang};
  return KEVO_OK;
}

/* A Triton candidate's compile options (num_warps, num_stages) among its knobs must be values
 * Triton can compile (triton.h), checked before the launch chunk sees them: num_warps=0 is
 * named as such, not as the block of 0 threads it would make. */
static int triton_options_check(const eval_candidate *cand, kevo_error *err) {
  if (!cand->lang || strcmp(cand->lang, "triton")) return KEVO_OK;
  for (size_t i = 0; i < cand->nknobs; i++)
    if (triton_is_option(cand->knobs[i].name) &&
        triton_option_value(cand->knobs[i].name, cand->knobs[i].value, NULL, err))
      return kevo_fail_prefix(err, "knob ");
  return KEVO_OK;
}

int evaluator_plans(evaluator *ev, const eval_candidate *cand, cJSON **out, kevo_error *err) {
  *out = NULL;
  const kevo_recipe *r = ev->recipe;
  chunk cc;
  int rc = triton_options_check(cand, err);
  if (rc) return rc;
  rc = candidate_chunk(cand, cand->name ? cand->name : "candidate", &cc, err);
  if (rc) return rc;
  const cJSON *dev = NULL;
  launch_device ld;
  eval_transport *t0 = ev->slots[0].t;
  if (t0->ops->ready && t0->ops->ready(t0->self) && !t0->ops->device(t0->self, &dev, NULL))
    eval_device_of(dev, &ld);
  cJSON *shapes = cJSON_CreateArray();
  for (size_t i = 0; shapes && i < r->nshapes; i++) {
    cJSON *sh = cJSON_CreateObject();
    cJSON_AddStringToObject(sh, "label", r->shapes[i].label);
    cJSON_AddItemToArray(shapes, sh);
  }
  if (!shapes) return kevo_fail(err, KEVO_E_NOMEM, "no memory for plans");
  recipe_knobs ks;
  recipe_knobs_fill(cand->lang, cand->knobs, cand->nknobs, cand->source, cand->len, r, &ks);
  rc = resolve_plans(r, r->shapes, r->nshapes, &cc, ks.d, ks.n, dev ? &ld : NULL, 0, NULL, shapes,
                     "plan", err);
  recipe_knobs_free(&ks);
  if (rc) {
    cJSON_Delete(shapes);
    return rc;
  }
  *out = shapes;
  return KEVO_OK;
}

static const char *cand_name(const eval_candidate *c) {
  return c->name ? c->name : !strcmp(c->lang, "triton") ? "candidate.py" : "candidate.cu";
}

/* A Triton candidate before compiling: resolves its launch chunk at the benchmark shape into
 * the compile jobs (their signatures come from the launch's arguments). */
static void triton_prepare(evaluator *ev, const eval_candidate *cand, const cJSON *dev, built *b) {
  chunk cc;
  if (triton_options_check(cand, &b->perr) ||
      candidate_chunk(cand, cand_name(cand), &cc, &b->perr)) {
    b->pverdict = "launch_error";
    return;
  }
  launch_device ld;
  eval_device_of(dev, &ld);
  cJSON *shapes = cJSON_CreateArray();
  cJSON_AddItemToArray(shapes, cJSON_CreateObject());
  recipe_knobs ks;
  recipe_knobs_fill("triton", cand->knobs, cand->nknobs, cand->source, cand->len, ev->recipe, &ks);
  int rc = resolve_plans(ev->recipe, ev->recipe->shapes, 1, &cc, ks.d, ks.n, dev ? &ld : NULL, 0,
                         NULL, shapes, "candidate", &b->perr);
  recipe_knobs_free(&ks);
  if (rc == KEVO_E_NOGPU) {
    b->pverdict = "no_gpu";
  } else if (rc) {
    b->pverdict = "launch_error";
  } else if (evtri_prepare(cJSON_GetObjectItem(cJSON_GetArrayItem(shapes, 0), "candidate"),
                           cand->source, cand->len, cand->knobs, cand->nknobs, dtype_of, ev->recipe,
                           &b->tp, &b->perr)) {
    b->pverdict = "launch_error";
  }
  cJSON_Delete(shapes);
}

/* ---- a PyTorch reference (docs/kbench.md) ---- */

typedef struct torch_ctx {
  eval_transport *t;
  double deadline;
} torch_ctx;

static int torch_worker(void *ctx, cJSON *req, const kevo_blob *blobs, size_t n, kevo_frame *reply,
                        kevo_error *err) {
  torch_ctx *c = ctx;
  return c->t->ops->request(c->t->self, req, blobs, n, c->deadline, reply, err);
}

/* The slot's PyTorch bridge, started on the slot's GPU (CUDA_VISIBLE_DEVICES as its worker). */
static int slot_torch(evaluator *ev, eval_slot *sl, kevo_error *err) {
  if (sl->torch) return KEVO_OK;
  torchref_opts o = {.gpu = sl->t->gpu[0] ? sl->t->gpu : NULL};
  return torchref_open(ev->recipe->reference.file, &o, &sl->torch, err);
}

/* Sends req with an external reference; when the worker lacks reference outputs the bridge
 * computes them on the worker's own inputs (torchref_supply) and req goes again. After a
 * timed ok, adds eager and torch.compile times measured once per evaluator. */
static int torch_request(evaluator *ev, eval_slot *sl, cJSON *req, const kevo_blob *blobs,
                         size_t nblobs, double deadline, kevo_frame *reply, kevo_error *err) {
  torch_ctx ctx = {sl->t, deadline};
  torchref_make_external(req, ev->torch_key);
  int rc = torch_worker(&ctx, req, blobs, nblobs, reply, err);
  const cJSON *missing = rc ? NULL : cJSON_GetObjectItem(reply->header, "missing");
  if (missing) {
    if ((rc = slot_torch(ev, sl, err))) {
      kevo_frame_free(reply);
      return kevo_fail_prefix(err, "the PyTorch reference: ");
    }
    rc = torchref_supply(sl->torch, torch_worker, &ctx, req, missing, err);
    kevo_frame_free(reply);
    if (rc) return rc;
    rc = torch_worker(&ctx, req, blobs, nblobs, reply, err);
  }
  cJSON *bench = rc ? NULL : cJSON_GetObjectItem(reply->header, "bench");
  if (!bench) return rc;
  if (!sl->torch_base &&
      (slot_torch(ev, sl, err) ||
       torchref_baseline(sl->torch, torch_worker, &ctx, req, &sl->torch_base, err))) {
    sl->torch_base = cJSON_CreateObject();
    cJSON_AddStringToObject(sl->torch_base, "error", err->msg);
  }
  torchref_add_baseline(bench, sl->torch_base);
  return KEVO_OK;
}

static triton_pool *pool_of(evaluator *ev) {
  if (!ev->tp && !ev->tp_rc) {
    triton_pool_opts o = {.arch = arch_of(ev)};
    ev->tp_rc = triton_pool_new(&o, &ev->tp, &ev->tp_err);
  }
  return ev->tp;
}

/* Sets the verdict of a candidate that did not compile; 1 when it did not. */
static int compile_failed(evaluator *ev, cJSON *res, const eval_candidate *cand, built *b) {
  const char *name = cand_name(cand);
  if (!strcmp(cand->lang, "triton")) {
    if (b->pverdict) {
      set_verdict(res, b->pverdict, !strcmp(b->pverdict, "no_gpu") ? "verify" : "compile", "%s%s",
                  !strcmp(b->pverdict, "no_gpu") ? "resolving the launch needs a GPU: " : "",
                  b->perr.msg);
      return 1;
    }
    const evtri_job *j = evtri_failed(&b->tp);
    if (!j) return 0;
    if (j->rc == KEVO_E_COMPILE && j->mod && j->mod->ndiags) {
      const triton_diag *d = &j->mod->diags[0];
      set_verdict(res, "compile_error", "compile", "%zu error%s; first: %s:%d:%d: %s",
                  j->mod->ndiags, j->mod->ndiags == 1 ? "" : "s", name, d->line, d->col,
                  d->message ? d->message : "");
    } else if (j->rc == KEVO_E_COMPILE) {
      set_verdict(res, "compile_error", "compile", "%s", j->err.msg);
    } else {
      set_verdict(res, "error", "compile", "compiling %s with Triton failed: %s: %s", j->kernel,
                  kevo_code(j->rc ? j->rc : KEVO_E_COMPILE), j->err.msg);
    }
    return 1;
  }
  cuda_module *cm = b->cm;
  if (b->crc == KEVO_E_COMPILE || (cm && !cm->ok)) {
    int n = count_errors(cm);
    const cuda_diag *d = NULL;
    for (size_t i = 0; cm && i < cm->ndiags && !d; i++)
      if (!strcmp(cm->diags[i].severity, "error")) d = &cm->diags[i];
    if (d)
      set_verdict(res, "compile_error", "compile", "%d error%s; first: %s:%d:%d: %s", n,
                  n == 1 ? "" : "s", name, d->line, d->col, d->message);
    else
      set_verdict(res, "compile_error", "compile", "%s",
                  b->cerr.msg[0] ? b->cerr.msg : "did not compile");
    return 1;
  }
  if (b->crc || !cm) {
    set_verdict(res, "error", "compile", "compiling failed: %s: %s", kevo_code(b->crc),
                b->cerr.msg);
    return 1;
  }
  (void)ev;
  return 0;
}

/* The result's "warnings": what the compiled code does that the timing must not trust blindly
 * (compile.warnings), a reference slowed between the candidate's repetitions, and a timing
 * loop that had one input set to rotate over (a problem too large for five sets). */
static void add_warnings(cJSON *res) {
  cJSON *w = cJSON_CreateArray(), *it;
  cJSON_ArrayForEach(it, cJSON_GetObjectItem(cJSON_GetObjectItem(res, "compile"), "warnings")) {
    char text[300];
    snprintf(text, sizeof text, "the kernel %s", cJSON_GetStringValue(it));
    cJSON_AddItemToArray(w, cJSON_CreateString(text));
  }
  const char *drift =
      cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(res, "bench"), "ref_drift"));
  if (drift) cJSON_AddItemToArray(w, cJSON_CreateString(drift));
  const char *sets = cJSON_GetStringValue(
      cJSON_GetObjectItem(cJSON_GetObjectItem(res, "bench"), "input_sets_note"));
  if (sets) cJSON_AddItemToArray(w, cJSON_CreateString(sets));
  cJSON_AddItemToObject(res, "warnings", w);
}

/* Records what the evaluation verified on beyond the recipe: the held-out shapes (drawn for
 * this evaluation, never in a prompt) and whether the inputs' seed was secret. */
static void record_shapes(cJSON *res, const eval_shapes *shs, uint64_t seed) {
  cJSON *v = cJSON_GetObjectItem(res, "verify");
  if (!cJSON_IsObject(v)) return;
  cJSON *held = cJSON_AddArrayToObject(v, "held_out");
  for (size_t i = shs->n - shs->nheld; i < shs->n; i++)
    cJSON_AddItemToArray(held, cJSON_CreateString(shs->s[i].label));
  if (seed)
    cJSON_AddNumberToObject(v, "seed", (double)(seed & ((1ull << 53) - 1)));
  else
    cJSON_AddStringToObject(v, "seed", "secret");
}

/* judge's device step: the worker's device into the result. Returns non-zero when the result
 * is already a verdict; a machine without a GPU fills nogpu instead (compiling goes on). */
static int judge_device(eval_slot *sl, cJSON *res, const cJSON **dev, char *nogpu, size_t cap) {
  kevo_error err = {0};
  int drc = sl->t->ops->device(sl->t->self, dev, &err);
  if (drc == KEVO_E_NOGPU) {
    snprintf(nogpu, cap, "%s", err.msg);
    return 0;
  }
  if (drc) {
    set_verdict(res, "error", "verify", "%s", err.msg);
    return 1;
  }
  cJSON *d = cJSON_AddObjectToObject(res, "device");
  cJSON_AddItemToObject(d, "name", cJSON_Duplicate(cJSON_GetObjectItem(*dev, "name"), 1));
  cJSON_AddItemToObject(d, "cc", cJSON_Duplicate(cJSON_GetObjectItem(*dev, "cc"), 1));
  cJSON_AddItemToObject(d, "copy_gbps", cJSON_Duplicate(cJSON_GetObjectItem(*dev, "copy_gbps"), 1));
  return 0;
}

/* The GPU that judged the result, in its device object (which the worker's reply replaces):
 * device.gpu (the slot's CUDA_VISIBLE_DEVICES value) and device.pci_bus (bus: from the slot's
 * hello, copied before the request, since a worker killed at a deadline takes its hello with it),
 * unless the reply named them itself. A remote worker's reply names them (cmd_worker_redis.c);
 * the slot's hello is any live worker's there, so it names nothing. */
static void name_gpu(const eval_slot *sl, cJSON *res, const char *bus) {
  cJSON *d = cJSON_GetObjectItem(res, "device");
  if (!cJSON_IsObject(d) || !strcmp(sl->t->ops->kind, "redis")) return;
  if (sl->t->gpu[0] && !cJSON_GetObjectItem(d, "gpu"))
    cJSON_AddStringToObject(d, "gpu", sl->t->gpu);
  if (bus[0] && !cJSON_GetObjectItem(d, "pci_bus")) cJSON_AddStringToObject(d, "pci_bus", bus);
}

/* judge's reference step: the recipe's reference launch resolved into every shape's plan
 * (module index ncand). Returns non-zero when the result is already a verdict. */
static int reference_plans(evaluator *ev, cJSON *res, const eval_shapes *shs,
                           const launch_device *ld, int ncand, cJSON *shapes) {
  kevo_error err = {0};
  const kevo_source *ref = &ev->recipe->reference;
  chunk rc_chunk = {ref->launch, ref->launch ? strlen(ref->launch) : 0, ev->recipe->path,
                    ref->launch_line, ref->lang};
  if (!ref->launch) {
    launch_block lb;
    if (launch_extract(ref->lang, ev->ref_src.data, ev->ref_src.len, &lb, &err)) {
      set_verdict(res, "error", "compile", "the recipe's reference: %s: %s", ref->file, err.msg);
      return 1;
    }
    rc_chunk = (chunk){lb.text, lb.len, ref->file, lb.line, ref->lang};
  }
  recipe_knobs ks;
  recipe_knobs_fill(ref->lang, NULL, 0, ev->ref_src.data, ev->ref_src.len, ev->recipe, &ks);
  int lrc = resolve_plans(ev->recipe, shs->s, shs->n, &rc_chunk, ks.d, ks.n, ld, ncand, ev->ref_mod,
                          shapes, "reference", &err);
  recipe_knobs_free(&ks);
  if (lrc) {
    set_verdict(res, "error", "compile", "the recipe's reference launch: %s", err.msg);
    return 1;
  }
  return 0;
}

/* judge's last step: the worker's reply into the result (frees it), the shapes recorded, and
 * the run's incumbent (what racing compares with) moved when this candidate beat it. */
static void judge_reply(evaluator *ev, cJSON *res, kevo_frame *reply, const cJSON *dev,
                        const eval_shapes *shs, uint64_t seed) {
  eval_merge_reply(res, reply->header, dev);
  kevo_frame_free(reply);
  record_shapes(res, shs, seed);
  const cJSON *bn = cJSON_GetObjectItem(res, "bench");
  double med = eval_jnum(bn, "median_ms");
  pthread_mutex_lock(&ev->mu);
  if (cJSON_IsTrue(cJSON_GetObjectItem(res, "ok")) && med > 0 &&
      !cJSON_IsTrue(cJSON_GetObjectItem(bn, "raced")) &&
      (ev->incumbent_ms <= 0 || med < ev->incumbent_ms))
    ev->incumbent_ms = med;
  pthread_mutex_unlock(&ev->mu);
}

static double incumbent(evaluator *ev) {
  pthread_mutex_lock(&ev->mu);
  double ms = ev->incumbent_ms;
  pthread_mutex_unlock(&ev->mu);
  return ms;
}

/* Judges one candidate whose compilation is done (b), candidate `index` of its batch. Always
 * returns a result (NULL only out of memory). In profile mode (ev->prof) the request joins the
 * profile batch instead of going to the worker. */
static cJSON *judge(evaluator *ev, eval_slot *sl, const eval_candidate *cand, built *b,
                    size_t index) {
  cJSON *res = cJSON_CreateObject();
  if (!res) return NULL;
  set_verdict(res, "error", "compile", "not judged");
  const char *name = cand_name(cand);
  int tri = !strcmp(cand->lang, "triton");
  cJSON_AddItemToObject(res, "compile",
                        tri ? evtri_compile_json(&b->tp, arch_of(ev))
                            : compile_json(b->cm, arch_of(ev)));
  kevo_error err = {0};
  cJSON *req = NULL;
  kevo_blob blobs[EVTRI_MAX_JOBS + 1];
  eval_shapes shs = {0};
  int ncand = tri ? (int)b->tp.njobs : 1, queued = 0;
  const cJSON *dev = NULL; /* the worker's hello, once asked (gone with a killed worker) */
  char bus[64] = "";       /* its PCI bus, kept */

  if (compile_failed(ev, res, cand, b)) goto done;
  if (compile_reference(ev)) {
    set_verdict(res, "error", "compile", "the recipe's reference does not build: %s",
                ev->ref_err.msg);
    goto done;
  }

  char nogpu[1024] = "";
  if (judge_device(sl, res, &dev, nogpu, sizeof nogpu)) goto done;
  if (dev && cJSON_GetStringValue(cJSON_GetObjectItem(dev, "pci_bus")))
    snprintf(bus, sizeof bus, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(dev, "pci_bus")));
  launch_device ld;
  eval_device_of(dev, &ld);

  req = cJSON_CreateObject();
  cJSON_AddStringToObject(req, "name", name);
  /* secret inputs: the worker draws a seed per evaluation; an external reference's outputs
   * are computed by another process, so its seed is the evaluator's own secret (drawn once) */
  uint64_t seed = ev->cfg.seed ? ev->cfg.seed : ev->torch_key[0] ? ev->session_seed : 0;
  eval_shapes_make(ev->recipe, !ev->torch_key[0], &shs);
  if (eval_build_request(ev->recipe, &shs, &ev->cfg, seed, ev->cfg.race ? incumbent(ev) : 0, req,
                         ncand, &err)) {
    set_verdict(res, "error", "compile", "the recipe: %s", err.msg);
    goto done;
  }
  chunk cc;
  if (candidate_chunk(cand, name, &cc, &err)) {
    set_verdict(res, "launch_error", "compile", "%s", err.msg);
    goto done;
  }
  cJSON *shapes = cJSON_GetObjectItem(req, "shapes");
  recipe_knobs ks;
  recipe_knobs_fill(cand->lang, cand->knobs, cand->nknobs, cand->source, cand->len, ev->recipe,
                    &ks);
  int lrc = resolve_plans(ev->recipe, shs.s, shs.n, &cc, ks.d, ks.n, dev ? &ld : NULL, 0,
                          tri ? NULL : b->cm, shapes, "candidate", &err);
  recipe_knobs_free(&ks);
  if (!lrc && tri) lrc = evtri_finish(&b->tp, shapes, dtype_of, ev->recipe, &err);
  if (lrc && !(lrc == KEVO_E_NOGPU && nogpu[0])) {
    set_verdict(res, "launch_error", "compile", "%s", err.msg);
    goto done;
  }
  if (nogpu[0]) {
    set_verdict(res, "no_gpu", "verify", "verification needs a GPU: %s", nogpu);
    goto done;
  }
  for (int i = 0; i < ncand; i++)
    blobs[i] = tri ? (kevo_blob){b->tp.jobs[i].mod->cubin, b->tp.jobs[i].mod->cubin_size}
                   : (kevo_blob){b->cm->cubin, b->cm->cubin_size};
  if (ev->prof) { /* profile mode: the request joins the batch instead of being sent */
    int has_ref = !ev->torch_key[0];
    if (has_ref && reference_plans(ev, res, &shs, &ld, ncand, shapes)) goto done;
    if (has_ref) blobs[ncand] = (kevo_blob){ev->ref_mod->cubin, ev->ref_mod->cubin_size};
    profbatch_add(ev->prof, index, req, blobs, ncand, has_ref);
    set_verdict(res, "ok", "profile", "in the profile batch");
    queued = 1;
    goto done;
  }
  kevo_frame reply;
  evalclient_stats before = sl->t->ops->stats(sl->t->self);
  eval_deadline dl;
  double copy = cJSON_GetNumberValue(cJSON_GetObjectItem(dev, "copy_gbps"));
  pthread_mutex_lock(&ev->mu);
  double ref_ms = ev->ref_ms;
  pthread_mutex_unlock(&ev->mu);
  eval_deadline_of(req, ncand, isnan(copy) ? 0 : copy, ref_ms, &dl);
  double deadline = ev->cfg.deadline_s > 0 ? ev->cfg.deadline_s : dl.s;
  /* under a batch's start_by: no later than EVAL_START_BY_OVERRUN_S past it */
  int run_bound = 0;
  if (ev->cfg.start_by > 0) {
    double left = ev->cfg.start_by + EVAL_START_BY_OVERRUN_S - mono_s();
    if (left < 0.05) left = 0.05;
    if (left < deadline) deadline = left, run_bound = 1;
  }
  int wrc;
  if (ev->torch_key[0]) {
    wrc = torch_request(ev, sl, req, blobs, (size_t)ncand, deadline, &reply, &err);
    goto judged;
  }
  if (reference_plans(ev, res, &shs, &ld, ncand, shapes)) goto done;

  blobs[ncand] = (kevo_blob){ev->ref_mod->cubin, ev->ref_mod->cubin_size};
  wrc = sl->t->ops->request(sl->t->self, req, blobs, (size_t)ncand + 1, deadline, &reply, &err);
judged:
  if (wrc == KEVO_E_TIMEOUT && run_bound) {
    set_verdict(res, "not_evaluated", "verify",
                "not evaluated: the run's time ran out while it was being judged (the worker "
                "was stopped %.1f s past the deadline and replaced)",
                EVAL_START_BY_OVERRUN_S);
  } else if (wrc == KEVO_E_TIMEOUT) {
    set_verdict(res, "timeout", "verify",
                "no result within %.0f s (%s): the kernel probably never finishes (the worker was "
                "killed and replaced)",
                deadline, ev->cfg.deadline_s > 0 ? "the deadline set" : dl.why);
  } else if (wrc == KEVO_E_WORKER && sl->t->ops->stats(sl->t->self).deaths > before.deaths) {
    set_verdict(res, "crash", "verify", "%s: the kernel took the worker down with it", err.msg);
  } else if (wrc) {
    set_verdict(res, "error", "verify", "%s", err.msg);
  } else {
    judge_reply(ev, res, &reply, dev, &shs, seed);
    /* the reference's time, for the next evaluations' deadlines */
    const cJSON *bench = cJSON_GetObjectItem(res, "bench");
    double t = fmax(eval_jnum(bench, "ref_alone_ms"), eval_jnum(bench, "eager_ms"));
    pthread_mutex_lock(&ev->mu);
    if (t > ev->ref_ms) ev->ref_ms = t;
    pthread_mutex_unlock(&ev->mu);
  }

done:
  if (ev->prof && !queued) {
    const char *v = eval_jstr(res, "verdict");
    char why[2300];
    snprintf(why, sizeof why, "not profiled: %s: %s", v, eval_jstr(res, "message"));
    profbatch_skip(ev->prof, index, !strcmp(v, "no_gpu") ? "no_gpu" : "failed", why);
  }
  name_gpu(sl, res, bus);
  add_warnings(res);
  eval_shapes_free(&shs);
  cJSON_Delete(req);
  char *fb = eval_feedback(res, cand->source, cand->len);
  cJSON_AddStringToObject(res, "feedback", fb ? fb : "");
  free(fb);
  return res;
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

/* Compiles every Triton job of the batch on the pool's servers at once. */
static void compile_triton(evaluator *ev, const eval_candidate *cands, built *bs, size_t n,
                           double start_by) {
  size_t njobs = 0;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(cands[i].lang, "triton") && !bs[i].pverdict && !bs[i].late) njobs += bs[i].tp.njobs;
  if (!njobs) return;
  triton_compile_opts *o = calloc(njobs, sizeof *o);
  triton_module **mods = calloc(njobs, sizeof *mods);
  int *rcs = calloc(njobs, sizeof *rcs);
  kevo_error *errs = calloc(njobs, sizeof *errs);
  triton_pool *p = pool_of(ev);
  size_t k = 0;
  for (size_t i = 0; o && mods && rcs && errs && i < n; i++) {
    if (strcmp(cands[i].lang, "triton") || bs[i].pverdict || bs[i].late) continue;
    for (size_t j = 0; j < bs[i].tp.njobs; j++) {
      evtri_compile_opts(&bs[i].tp, j, cands[i].source, cands[i].len, cand_name(&cands[i]),
                         arch_of(ev), &o[k]);
      o[k++].deadline_s = start_by;
    }
  }
  if (p && k == njobs) triton_compile_many(p, o, njobs, mods, rcs, errs);
  k = 0;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(cands[i].lang, "triton") || bs[i].pverdict || bs[i].late) continue;
    for (size_t j = 0; j < bs[i].tp.njobs; j++, k++) {
      evtri_job *jb = &bs[i].tp.jobs[j];
      if (!p) {
        jb->rc = ev->tp_rc;
        jb->err = ev->tp_err;
      } else if (k < njobs && mods && rcs && errs && o) {
        jb->mod = mods[k];
        jb->rc = rcs[k];
        jb->err = errs[k];
        if (cut_by(start_by, rcs[k])) bs[i].late = LATE_COMPILING;
      } else {
        jb->rc = kevo_fail(&jb->err, KEVO_E_NOMEM, "no memory to compile %zu kernels", njobs);
      }
    }
  }
  free(o);
  free(mods);
  free(rcs);
  free(errs);
}

/* CUDA compiles run on a thread of their own, one group of as many candidates as there are
 * CPUs at a time (cuda_compile_many), while this thread judges the candidates already
 * compiled: the GPU works on group k while group k+1 compiles. */
typedef struct compile_pipe {
  const char *arch;
  double start_by; /* eval_config's: groups not begun by then are not compiled */
  const eval_candidate *cands;
  built *bs;
  size_t n;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  size_t done; /* candidates [0, done) are compiled (or are not CUDA) */
} compile_pipe;

static void compile_group(compile_pipe *cp, size_t from, size_t to) {
  cuda_compile_opts opts[256];
  cuda_module *mods[256];
  int rcs[256];
  size_t which[256], k = 0;
  kevo_error *errs = calloc(256, sizeof *errs);
  if (!errs) {
    for (size_t i = from; i < to; i++)
      cp->bs[i].crc = kevo_fail(&cp->bs[i].cerr, KEVO_E_NOMEM, "no memory to compile");
    return;
  }
  for (size_t i = from; i < to; i++)
    if (!strcmp(cp->cands[i].lang, "cuda")) {
      const eval_candidate *c = &cp->cands[i];
      opts[k] = (cuda_compile_opts){.source = c->source,
                                    .len = c->len,
                                    .name = base_name(cand_name(c)),
                                    .arch = cp->arch,
                                    .defines = c->knobs,
                                    .ndefines = c->nknobs,
                                    .deadline_s = cp->start_by};
      mods[k] = NULL;
      which[k++] = i;
    }
  if (k == 1) {
    memset(&errs[0], 0, sizeof errs[0]);
    rcs[0] = cuda_compile(&opts[0], &mods[0], &errs[0]);
  } else if (k > 1) {
    cuda_compile_many(opts, k, mods, rcs, errs);
  }
  for (size_t j = 0; j < k; j++) {
    cp->bs[which[j]].cm = mods[j];
    cp->bs[which[j]].crc = rcs[j];
    cp->bs[which[j]].cerr = errs[j];
    if (cut_by(cp->start_by, rcs[j])) cp->bs[which[j]].late = LATE_COMPILING;
  }
  free(errs);
}

static void *compile_main(void *arg) {
  compile_pipe *cp = arg;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  size_t group = cpus < 1 ? 1 : cpus > 256 ? 256 : (size_t)cpus;
  for (size_t from = 0; from < cp->n; from += group) {
    size_t to = from + group < cp->n ? from + group : cp->n;
    if (past(cp->start_by)) /* the rest will not be judged: not compiled either */
      for (size_t i = from; i < to; i++)
        cp->bs[i].late = LATE_UNSTARTED;
    else
      compile_group(cp, from, to);
    pthread_mutex_lock(&cp->mu);
    cp->done = to;
    pthread_cond_broadcast(&cp->cv);
    pthread_mutex_unlock(&cp->mu);
  }
  return NULL;
}

/* The judging side of a batch: every slot of the pool takes the next candidate not yet taken
 * (in batch order) once it is compiled, judges it on its worker and puts its result at the
 * candidate's index; one thread per slot, so a batch runs on every GPU at once. Results land
 * by index, never in the order they come back: the batch's answer (and so the journal) does
 * not depend on which GPU was faster (docs/resume.md "Many GPUs"). */
typedef struct judge_pipe {
  evaluator *ev;
  compile_pipe *cp;
  const eval_candidate *cands;
  built *bs;
  cJSON **results;
  size_t next; /* the next candidate to take, under cp->mu */
  int nomem;
} judge_pipe;

static void judge_each(void *arg, size_t slot) {
  judge_pipe *jp = arg;
  compile_pipe *cp = jp->cp;
  for (;;) {
    pthread_mutex_lock(&cp->mu);
    size_t i = jp->next;
    if (i < cp->n && !jp->nomem)
      jp->next++;
    else
      i = cp->n;
    while (i < cp->n && cp->done <= i)
      pthread_cond_wait(&cp->cv, &cp->mu);
    pthread_mutex_unlock(&cp->mu);
    if (i >= cp->n) return;
    /* a candidate not started by the batch's start_by is not evaluated (kevo run's --time) */
    if (jp->bs[i].late || past(cp->start_by)) {
      jp->results[i] = cJSON_CreateObject();
      if (jp->results[i])
        set_verdict(jp->results[i], "not_evaluated", "compile",
                    jp->bs[i].late == LATE_COMPILING
                        ? "not evaluated: the run's time ran out while it was being compiled"
                        : "not evaluated: the run's time ran out before it was started");
    } else {
      jp->results[i] = judge(jp->ev, &jp->ev->slots[slot], &jp->cands[i], &jp->bs[i], i);
    }
    if (!jp->results[i]) {
      pthread_mutex_lock(&cp->mu);
      jp->nomem = 1;
      pthread_mutex_unlock(&cp->mu);
    }
  }
}

int evaluator_run_many(evaluator *ev, const eval_candidate *cands, size_t n, cJSON **results,
                       kevo_error *err) {
  for (size_t i = 0; i < n; i++) {
    results[i] = NULL;
    if (check_candidate(&cands[i], err)) return kevo_fail_prefix(err, "candidate %zu: ", i + 1);
  }
  built *bs = calloc(n ? n : 1, sizeof *bs);
  if (!bs) return kevo_fail(err, KEVO_E_NOMEM, "no memory for %zu candidates", n);
  int rc = KEVO_OK;
  double start_by = ev->cfg.start_by;
  compile_pipe cp = {.arch = arch_of(ev), .cands = cands, .bs = bs, .n = n, .start_by = start_by};
  pthread_mutex_init(&cp.mu, NULL);
  pthread_cond_init(&cp.cv, NULL);
  pthread_t th;
  int threaded = pthread_create(&th, NULL, compile_main, &cp) == 0;
  if (!threaded) compile_main(&cp);
  /* Meanwhile: the workers' hello, the reference, and the Triton candidates (their launch
   * chunks give the signatures; then every Triton compile at once). */
  grow_slots(ev);
  const cJSON *dev = NULL;
  kevo_error derr = {0};
  int drc = evaluator_device(ev, &dev, &derr), have_dev = drc == KEVO_OK;
  if (drc == KEVO_E_ARG) { /* GPUs of two models: no result of this pool may be compared */
    *err = derr;
    rc = drc; /* nothing is judged; the compile thread still runs to its end */
  }
  compile_reference(ev);
  for (size_t i = 0; i < n; i++)
    if (!strcmp(cands[i].lang, "triton"))
      triton_prepare(ev, &cands[i], have_dev ? dev : NULL, &bs[i]);
  if (past(start_by))
    for (size_t i = 0; i < n; i++)
      if (!strcmp(cands[i].lang, "triton") && !bs[i].late) bs[i].late = LATE_UNSTARTED;
  compile_triton(ev, cands, bs, n, start_by);
  judge_pipe jp = {.ev = ev, .cp = &cp, .cands = cands, .bs = bs, .results = results};
  if (rc == KEVO_OK) eval_pool_each(ev->pool, ev->nslots < n ? ev->nslots : n, judge_each, &jp);
  if (jp.nomem && rc == KEVO_OK) rc = kevo_fail(err, KEVO_E_NOMEM, "no memory for a result");
  if (threaded) pthread_join(th, NULL);
  pthread_mutex_destroy(&cp.mu);
  pthread_cond_destroy(&cp.cv);
  for (size_t i = 0; i < n; i++) {
    cuda_module_free(bs[i].cm);
    evtri_prep_free(&bs[i].tp);
  }
  free(bs);
  return rc;
}

void evaluator_profile_prepare(evaluator *ev) {
  if (!ev || ev->standby_asked || !ev->nslots) return;
  ev->standby_asked = 1;
  eval_transport *t = ev->slots[0].t;
  if (strcmp(t->ops->kind, "local")) return; /* a remote worker profiles cold */
  cJSON *req = cJSON_CreateObject();
  kevo_frame reply = {0};
  kevo_error err = {0};
  cJSON_AddStringToObject(req, "op", "profile_standby");
  if (!t->ops->request(t->self, req, NULL, 0, 10.0, &reply, &err)) kevo_frame_free(&reply);
  cJSON_Delete(req);
}

int evaluator_profile_many(evaluator *ev, const eval_candidate *cands, size_t n, int with_reference,
                           double deadline_ms, const char *const *bounds, cJSON **profiles,
                           kevo_error *err) {
  enum { CHUNK = 12 }; /* candidates per ncu run: the worker loads 16 modules per request */
  evaluator_profile_prepare(ev);
  for (size_t i = 0; i < n; i++)
    profiles[i] = NULL;
  cJSON **res = calloc(n ? n : 1, sizeof *res);
  if (!res) return kevo_fail(err, KEVO_E_NOMEM, "no memory to profile %zu candidates", n);
  int rc = KEVO_OK;
  for (size_t from = 0; !rc && from < n; from += CHUNK) {
    size_t m = n - from < CHUNK ? n - from : CHUNK;
    profbatch *pb = profbatch_new(m, with_reference);
    if (!pb) {
      rc = kevo_fail(err, KEVO_E_NOMEM, "no memory to profile %zu candidates", n);
      break;
    }
    ev->prof = pb;
    rc = evaluator_run_many(ev, cands + from, m, res + from, err);
    ev->prof = NULL;
    double dl = deadline_ms > 0 ? deadline_ms : 30000 + 5000.0 * (double)m;
    /* one ncu run for the batch, on the first worker (profiling is not spread over GPUs) */
    eval_transport *t = ev->slots[0].t;
    if (!rc)
      profbatch_send(pb, t->ops->request, t->self, dl, bounds ? bounds + from : NULL,
                     profiles + from);
    profbatch_free(pb);
  }
  for (size_t i = 0; i < n; i++)
    cJSON_Delete(res[i]);
  free(res);
  return rc;
}
