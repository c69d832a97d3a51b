/* gpuplan.c: turning an evaluate request into device state: tensors, modules, per-shape
 * buffers and launch plans (docs/architecture.md "Launch chunks"), and replaying a plan. */
#include "gpueval_int.h"
#include "sha256.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DRV (&e->g->drv)

int wk_fail(wk_eval *e, const char *verdict, const char *stage, const char *fmt, ...) {
  if (e->verdict) return -1; /* the first failure is the one to report */
  e->verdict = verdict;
  e->stage = stage;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  return -1;
}

int wk_cuda_fail(wk_eval *e, CUresult r, const char *what) {
  if (cudrv_is_sticky(r)) {
    e->crashed = 1;
    return wk_fail(e, "crash", e->cur_stage, "%s: %s: the CUDA context is lost (%s)", what,
                   cudrv_errname(DRV, r), cudrv_errstr(DRV, r));
  }
  return wk_fail(e, "error", e->cur_stage, "%s: %s: %s", what, cudrv_errname(DRV, r),
                 cudrv_errstr(DRV, r));
}

/* A candidate's failure: launch_error, or crash when the context is gone. */
static int cand_fail(wk_eval *e, CUresult r, const char *what) {
  if (cudrv_is_sticky(r)) return wk_cuda_fail(e, r, what);
  return wk_fail(e, "launch_error", e->cur_stage, "%s: %s: %s", what, cudrv_errname(DRV, r),
                 cudrv_errstr(DRV, r));
}

static const cJSON *field(const cJSON *o, const char *k) {
  return cJSON_GetObjectItemCaseSensitive(o, k);
}

static int int_field(const cJSON *o, const char *k, double lo, double hi, double dflt,
                     double *out) {
  const cJSON *v = field(o, k);
  if (!v) {
    *out = dflt;
    return 0;
  }
  if (!cJSON_IsNumber(v) || v->valuedouble < lo || v->valuedouble > hi) return -1;
  *out = v->valuedouble;
  return 0;
}

/* ---- request ---------------------------------------------------------------------------- */

static int parse_tensors(wk_eval *e) {
  const cJSON *ts = field(e->req, "tensors");
  if (!cJSON_IsArray(ts) || cJSON_GetArraySize(ts) < 1 || cJSON_GetArraySize(ts) > WK_MAX_TENSORS)
    return wk_fail(e, "error", "verify", "request: tensors must be an array of 1 to %d",
                   WK_MAX_TENSORS);
  const cJSON *t;
  cJSON_ArrayForEach(t, ts) {
    wk_tensor *x = &e->tensors[e->ntensors];
    const cJSON *name = field(t, "name"), *role = field(t, "role"), *init = field(t, "init");
    if (!cJSON_IsString(name) || strlen(name->valuestring) >= WK_NAME)
      return wk_fail(e, "error", "verify", "request: tensors[%d].name is missing", e->ntensors);
    snprintf(x->name, sizeof x->name, "%s", name->valuestring);
    x->dt = wk_dtype_parse(cJSON_GetStringValue(field(t, "dtype")));
    if (x->dt < 0)
      return wk_fail(e, "error", "verify", "request: tensor %s has an unknown dtype", x->name);
    if (!cJSON_IsString(role) ||
        (strcmp(role->valuestring, "input") && strcmp(role->valuestring, "output")))
      return wk_fail(e, "error", "verify", "request: tensor %s: role must be input or output",
                     x->name);
    x->output = !strcmp(role->valuestring, "output");
    const char *kind = cJSON_GetStringValue(field(init, "kind"));
    x->kind = DK_NORMAL;
    x->a = 0, x->b = 1;
    if (kind && !strcmp(kind, "uniform"))
      x->kind = DK_UNIFORM, x->a = -1, x->b = 1;
    else if (kind && !strcmp(kind, "randint"))
      x->kind = DK_RANDINT, x->a = 0, x->b = 100;
    else if (kind && strcmp(kind, "normal"))
      return wk_fail(e, "error", "verify", "request: tensor %s: unknown init kind '%s'", x->name,
                     kind);
    if (int_field(init, "a", -1e300, 1e300, x->a, &x->a) ||
        int_field(init, "b", -1e300, 1e300, x->b, &x->b))
      return wk_fail(e, "error", "verify", "request: tensor %s: init.a/b must be numbers", x->name);
    e->ntensors++;
  }
  return 0;
}

static int load_modules(wk_eval *e, const kevo_blob *blobs, size_t nblobs) {
  const cJSON *ms = field(e->req, "modules"), *m;
  if (e->no_modules) ms = NULL; /* inputs, put_reference: the hash of no reference module */
  if (!e->no_modules &&
      (!cJSON_IsArray(ms) || cJSON_GetArraySize(ms) < 1 || cJSON_GetArraySize(ms) > WK_MAX_MODULES))
    return wk_fail(e, "error", "verify", "request: modules must be an array of 1 to %d",
                   WK_MAX_MODULES);
  kevo_sha256 h;
  kevo_sha256_init(&h);
  cJSON_ArrayForEach(m, ms) {
    int i = e->nmodules;
    const cJSON *b = field(m, "blob");
    const char *role = cJSON_GetStringValue(field(m, "role"));
    if (!cJSON_IsNumber(b) || b->valueint < 0 || (size_t)b->valueint >= nblobs || !role ||
        (strcmp(role, "candidate") && strcmp(role, "reference")))
      return wk_fail(e, "error", "verify", "request: modules[%d] needs a blob index and a role", i);
    e->module_is_ref[i] = !strcmp(role, "reference");
    if (e->external && e->module_is_ref[i])
      return wk_fail(e, "error", "verify",
                     "request: an external reference takes no reference module (modules[%d])", i);
    const kevo_blob *cubin = &blobs[b->valueint];
    e->blobs = blobs;
    CUresult r = DRV->cuModuleLoadData(&e->modules[i], cubin->data);
    if (r != CUDA_SUCCESS) {
      e->modules[i] = NULL;
      if (cudrv_is_sticky(r)) return wk_cuda_fail(e, r, "loading a module");
      return wk_fail(e, e->module_is_ref[i] ? "error" : "launch_error", "verify",
                     "cannot load the %s's cubin (module %d): %s: %s", role, i,
                     cudrv_errname(DRV, r), cudrv_errstr(DRV, r));
    }
    e->nmodules++;
    if (e->module_is_ref[i]) kevo_sha256_update(&h, cubin->data, cubin->size);
  }
  kevo_sha256_final_hex(&h, e->ref_hash);
  return 0;
}

int wk_parse(wk_eval *e, const kevo_blob *blobs, size_t nblobs) {
  const cJSON *v = field(e->req, "verify"), *sh = field(e->req, "shapes");
  double trials, seed;
  if (int_field(v, "trials", 1, 1000, 5, &trials) ||
      int_field(v, "seed", 0, 9007199254740992.0, 1, &seed))
    return wk_fail(e, "error", "verify", "request: verify.trials/seed out of range");
  e->trials = trials < 5 ? 5 : (int)trials; /* design.md: at least 5 */
  e->seed = (uint64_t)seed;
  /* no seed given: a secret one for this evaluation, so no kernel can rebuild its inputs */
  e->seed_secret = !cJSON_GetObjectItemCaseSensitive(v, "seed");
  if (e->seed_secret) e->seed = wk_secret64();
  e->key = wk_secret64(); /* the digest key: never in a request, never seen by a candidate */
  if (!cJSON_IsArray(sh) || cJSON_GetArraySize(sh) < 1 || cJSON_GetArraySize(sh) > WK_MAX_SHAPES)
    return wk_fail(e, "error", "verify", "request: shapes must be an array of 1 to %d",
                   WK_MAX_SHAPES);
  /* reference: {"external": key} on every shape: the outputs come from put_reference */
  const cJSON *shape;
  int ext = 0, n = 0;
  cJSON_ArrayForEach(shape, sh) {
    ext += cJSON_IsString(field(field(shape, "reference"), "external"));
    n++;
  }
  if (ext && ext != n)
    return wk_fail(e, "error", "verify",
                   "request: an external reference must be external on every shape");
  e->external = ext > 0;
  if (parse_tensors(e)) return -1;
  return load_modules(e, blobs, nblobs);
}

void wk_unload(wk_eval *e) {
  for (int i = 0; i < e->nmodules; i++) {
    if (e->modules[i]) DRV->cuModuleUnload(e->modules[i]);
    if (e->twins[i]) DRV->cuModuleUnload(e->twins[i]);
    e->twins[i] = NULL;
  }
  e->nmodules = 0;
}

/* Candidate module mi's twin, loaded from the same cubin the first time a plan needs it. */
static CUresult twin_of(wk_eval *e, int mi, CUmodule *out) {
  if (!e->twins[mi]) {
    double t0 = wk_now_ms();
    const cJSON *m = cJSON_GetArrayItem(field(e->req, "modules"), mi);
    const cJSON *b = field(m, "blob");
    if (!e->blobs || !cJSON_IsNumber(b)) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = DRV->cuModuleLoadData(&e->twins[mi], e->blobs[b->valueint].data);
    e->twin_ms += wk_now_ms() - t0;
    if (r) {
      e->twins[mi] = NULL;
      return r;
    }
  }
  *out = e->twins[mi];
  return CUDA_SUCCESS;
}

/* ---- shapes and plans ------------------------------------------------------------------- */

/* Rounded up to the driver's allocation granularity, so the slack a kernel could write into
 * without faulting is all ours to fill and check. */
static size_t round_grain(size_t n) {
  return n ? (n + WK_ALLOC_GRAIN - 1) / WK_ALLOC_GRAIN * WK_ALLOC_GRAIN : WK_ALLOC_GRAIN;
}

/* The pool keeps at most this much device memory between evaluations. */
#define WK_POOL_CAP ((size_t)24 << 30)

void wk_pool_drain(kevo_gpu *g) {
  for (int i = 0; i < g->npool; i++)
    g->drv.cuMemFree(g->pool[i].ptr);
  g->npool = 0;
  g->pool_bytes = 0;
}

/* A device buffer of exactly `bytes`: from the pool when one that size is there. */
static CUresult pool_alloc(kevo_gpu *g, CUdeviceptr *p, size_t bytes) {
  for (int i = 0; i < g->npool; i++)
    if (g->pool[i].bytes == bytes) {
      *p = g->pool[i].ptr;
      g->pool_bytes -= bytes;
      g->pool[i] = g->pool[--g->npool];
      return CUDA_SUCCESS;
    }
  CUresult r = g->drv.cuMemAlloc(p, bytes);
  if (r == CUDA_ERROR_OUT_OF_MEMORY && g->npool) { /* give the pool back and try again */
    wk_pool_drain(g);
    r = g->drv.cuMemAlloc(p, bytes);
  }
  return r;
}

/* Back to the pool (its contents are overwritten before any use: inputs drawn, outputs and
 * scratch poisoned or zeroed), or freed when the pool is full. */
static void pool_free(kevo_gpu *g, wk_buf *b) {
  if (!b->ptr) return;
  if (g->npool < WK_POOL && g->pool_bytes + b->bytes <= WK_POOL_CAP) {
    g->pool[g->npool].ptr = b->ptr;
    g->pool[g->npool++].bytes = b->bytes;
    g->pool_bytes += b->bytes;
  } else {
    g->drv.cuMemFree(b->ptr);
  }
  b->ptr = 0;
}

static int alloc_buf(wk_eval *e, wk_buf *b, size_t bytes, const char *what, int cand) {
  b->bytes = round_grain(bytes);
  CUresult r = pool_alloc(e->g, &b->ptr, b->bytes);
  if (r == CUDA_SUCCESS) r = DRV->cuMemsetD8Async(b->ptr, 0, b->bytes, e->g->stream);
  if (r == CUDA_SUCCESS) return 0;
  b->ptr = 0;
  char msg[512];
  snprintf(msg, sizeof msg, "allocating %s (%zu bytes)", what, bytes);
  return cand ? cand_fail(e, r, msg) : wk_cuda_fail(e, r, msg);
}

static int dims3(const cJSON *a, unsigned out[3]) {
  out[0] = out[1] = out[2] = 1;
  if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) < 1 || cJSON_GetArraySize(a) > 3) return -1;
  for (int i = 0; i < cJSON_GetArraySize(a); i++) {
    const cJSON *x = cJSON_GetArrayItem(a, i);
    if (!cJSON_IsNumber(x) || x->valuedouble < 1 || x->valuedouble > 4294967295.0) return -1;
    out[i] = (unsigned)x->valuedouble;
  }
  return 0;
}

/* The tensor (*tensor >= 0, bound per buffer set when the plan runs) or scratch buffer named. */
static wk_buf *find_buf(wk_shape *s, wk_plan *p, const char *name, int ntensors, int *tensor) {
  *tensor = -1;
  for (int i = 0; i < ntensors; i++)
    if (!strcmp(s->set[0].t[i].name, name)) return &s->set[0].t[*tensor = i];
  for (int i = 0; i < p->nscratch; i++)
    if (!strcmp(p->scratch[i].name, name)) return &p->scratch[i];
  return NULL;
}

/* The arrays of launch l for n arguments, in one allocation (wk_plan_release frees it). */
static int args_alloc(wk_launch *l, int n) {
  size_t each = sizeof *l->args + sizeof *l->argp + sizeof *l->tensor_arg;
  char *m = calloc(n > 0 ? (size_t)n : 1, each);
  if (!m) return -1;
  l->args = (wk_arg *)m;
  l->argp = (void **)(m + (size_t)n * sizeof *l->args);
  l->tensor_arg = (short *)(m + (size_t)n * (sizeof *l->args + sizeof *l->argp));
  return 0;
}

void wk_plan_release(wk_plan *p) {
  for (int i = 0; i < WK_MAX_KERNELS; i++) {
    free(p->k[i].args); /* the one allocation of args_alloc */
    p->k[i].args = NULL, p->k[i].argp = NULL, p->k[i].tensor_arg = NULL;
    p->k[i].nargs = 0;
  }
}

/* Bytes of kernel parameters a launch may pass here: 32764 with a 12.1+ driver on Volta and
 * later (the cubin must come from a 12.1+ compiler too: NVRTC here is), else 4096. */
static int params_cap(const wk_eval *e) {
  return e->g->driver >= 12010 && e->g->cc_major >= 7 ? KEVO_PROTO_MAX_PARAM_BYTES : 4096;
}

static int set_arg(const cJSON *a, wk_arg *out, void **p, short *tensor, wk_shape *s, wk_plan *plan,
                   int nt, size_t *bytes, const char **why) {
  const cJSON *v = a->child;
  *tensor = -1;
  if (!cJSON_IsObject(a) || !v || v->next) return *why = "an arg is one {kind: value}", -1;
  const char *k = v->string;
  *bytes = kevo_proto_param_add(*bytes, k);
  if (!strcmp(k, "buf")) {
    int ti;
    wk_buf *b = cJSON_IsString(v) ? find_buf(s, plan, v->valuestring, nt, &ti) : NULL;
    if (!b) return *why = "an arg names no tensor or scratch buffer", -1;
    out->v.ptr = b->ptr;
    *tensor = (short)ti;
  } else if (!strcmp(k, "null")) {
    out->v.ptr = 0;
  } else if (!cJSON_IsNumber(v)) {
    return *why = "a scalar arg is not a number", -1;
  } else if (!strcmp(k, "i32"))
    out->v.i32 = (int32_t)v->valuedouble;
  else if (!strcmp(k, "i64"))
    out->v.i64 = (int64_t)v->valuedouble;
  else if (!strcmp(k, "u32"))
    out->v.u32 = (uint32_t)v->valuedouble;
  else if (!strcmp(k, "u64"))
    out->v.u64 = (uint64_t)v->valuedouble;
  else if (!strcmp(k, "f32"))
    out->v.f32 = (float)v->valuedouble;
  else if (!strcmp(k, "f64"))
    out->v.f64 = v->valuedouble;
  else
    return *why = "unknown arg kind", -1;
  *p = &out->v;
  return 0;
}

int wk_plan_prepare(wk_eval *e, wk_shape *s, const cJSON *pj, wk_plan *p, int cand) {
  const char *who = cand ? "candidate" : "reference";
  const char *bad = cand ? "launch_error" : "error";
  const cJSON *scratch = field(pj, "scratch"), *ks = field(pj, "kernels"), *x;
  if (!cJSON_IsArray(ks) || cJSON_GetArraySize(ks) < 1 || cJSON_GetArraySize(ks) > WK_MAX_KERNELS)
    return wk_fail(e, bad, "verify", "%s plan of shape %s: kernels must be 1 to %d launches", who,
                   s->label, WK_MAX_KERNELS);
  if (scratch && (!cJSON_IsArray(scratch) || cJSON_GetArraySize(scratch) > WK_MAX_SCRATCH))
    return wk_fail(e, bad, "verify", "%s plan: scratch must be an array of at most %d", who,
                   WK_MAX_SCRATCH);
  cJSON_ArrayForEach(x, scratch) {
    wk_buf *b = &p->scratch[p->nscratch];
    const char *name = cJSON_GetStringValue(field(x, "name"));
    double bytes;
    if (!name || strlen(name) >= WK_NAME || int_field(x, "bytes", 0, 1e14, -1, &bytes) || bytes < 0)
      return wk_fail(e, bad, "verify", "%s plan: scratch[%d] needs a name and bytes", who,
                     p->nscratch);
    snprintf(b->name, sizeof b->name, "%s", name);
    b->zero = cJSON_IsTrue(field(x, "zero"));
    char what[256];
    snprintf(what, sizeof what, "%s scratch buffer '%s'", who, name);
    if (alloc_buf(e, b, (size_t)bytes, what, cand)) return -1;
    p->scratch_used[p->nscratch] = (size_t)bytes;
    size_t from = (size_t)bytes / 8 * 8; /* poison the slack: wk_slack_intact checks it */
    CUresult r = devk_pattern(DRV, &e->g->dk, e->g->stream, b->ptr + from, b->bytes - from,
                              wk_poison_a[DK_U8]);
    if (r) return wk_cuda_fail(e, r, "poisoning scratch slack");
    p->nscratch++;
  }
  cJSON_ArrayForEach(x, ks) {
    wk_launch *l = &p->k[p->nk];
    const cJSON *mod = field(x, "module"), *args = field(x, "args"), *a;
    const char *name = cJSON_GetStringValue(field(x, "name"));
    double shared;
    int mi = cJSON_IsNumber(mod) ? mod->valueint : -1;
    if (mi < 0 || mi >= e->nmodules || e->module_is_ref[mi] == (cand != 0))
      return wk_fail(e, bad, "verify", "%s plan: kernels[%d].module is not a %s module", who, p->nk,
                     who);
    if (!name || strlen(name) >= WK_NAME)
      return wk_fail(e, bad, "verify", "%s plan: kernels[%d] has no name", who, p->nk);
    snprintf(l->name, sizeof l->name, "%s", name);
    if (dims3(field(x, "grid"), l->grid) || dims3(field(x, "block"), l->block) ||
        int_field(x, "shared", 0, 4294967295.0, 0, &shared))
      return wk_fail(e, bad, "verify", "%s kernel %s: grid/block must be 1-3 positive integers",
                     who, name);
    l->shared = (unsigned)shared;
    CUmodule mod_at = e->modules[mi];
    CUresult r = cand == 2 ? twin_of(e, mi, &mod_at) : CUDA_SUCCESS;
    if (r) return cand_fail(e, r, "loading the candidate's cubin a second time");
    r = DRV->cuModuleGetFunction(&l->fn, mod_at, name);
    if (r == CUDA_ERROR_NOT_FOUND)
      return wk_fail(e, bad, "verify",
                     "the %s's cubin has no kernel named '%s' (is it extern \"C\"?)", who, name);
    if (r) return cand ? cand_fail(e, r, name) : wk_cuda_fail(e, r, name);
    if (l->shared > 48 * 1024) {
      r = DRV->cuFuncSetAttribute(l->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                  (int)l->shared);
      if (r) {
        char what[512];
        snprintf(what, sizeof what, "kernel %s asks for %u bytes of dynamic shared memory", name,
                 l->shared);
        return cand ? cand_fail(e, r, what) : wk_cuda_fail(e, r, what);
      }
    }
    int nargs = cJSON_GetArraySize(args);
    if (!cJSON_IsArray(args) || nargs > WK_MAX_ARGS)
      return wk_fail(e, bad, "verify", "%s kernel %s: args must be an array of at most %d", who,
                     name, WK_MAX_ARGS);
    if (args_alloc(l, nargs)) return wk_fail(e, "error", "verify", "out of host memory");
    size_t bytes = 0;
    cJSON_ArrayForEach(a, args) {
      const char *why = NULL;
      if (set_arg(a, &l->args[l->nargs], &l->argp[l->nargs], &l->tensor_arg[l->nargs], s, p,
                  e->ntensors, &bytes, &why))
        return wk_fail(e, bad, "verify", "%s kernel %s: args[%d]: %s", who, name, l->nargs, why);
      l->nargs++;
    }
    if (bytes > (size_t)params_cap(e))
      return wk_fail(e, bad, "verify",
                     "%s kernel %s: its %d arguments take %zu bytes of kernel parameters; this "
                     "GPU and driver (%d.%d, compute capability %d.%d) take at most %d (32764 "
                     "needs CUDA 12.1 and a Volta or later GPU): pass fewer arguments",
                     who, name, l->nargs, bytes, e->g->driver / 1000, e->g->driver % 1000 / 10,
                     e->g->cc_major, e->g->cc_minor, params_cap(e));
    p->nk++;
  }
  return 0;
}

int wk_shape_setup(wk_eval *e, wk_shape *s, int index, int nsets) {
  const cJSON *spec = cJSON_GetArrayItem(field(e->req, "shapes"), index);
  s->index = index;
  s->spec = spec;
  const char *label = cJSON_GetStringValue(field(spec, "label"));
  snprintf(s->label, sizeof s->label, "%s", label ? label : "?");
  s->held_out = cJSON_IsTrue(field(spec, "held_out"));
  s->nstress = cJSON_GetArraySize(field(spec, "stress"));
  if (s->nstress > e->trials - WK_ROTATE) s->nstress = e->trials - WK_ROTATE;
  if (s->nstress < 0) s->nstress = 0;
  const cJSON *numel = field(spec, "numel"), *dims = field(spec, "dims");
  for (int i = 0; i < e->ntensors; i++) {
    wk_tensor *t = &e->tensors[i];
    const cJSON *n = field(numel, t->name), *d = field(dims, t->name);
    if (!cJSON_IsNumber(n) || n->valuedouble < 0 || n->valuedouble > 1e13)
      return wk_fail(e, "error", "verify", "request: shape %s gives no numel for tensor %s",
                     s->label, t->name);
    s->numel[i] = (uint64_t)n->valuedouble;
    s->rank[i] = 0;
    if (cJSON_IsArray(d) && cJSON_GetArraySize(d) <= WK_MAX_RANK)
      for (const cJSON *x = d->child; x; x = x->next)
        s->dims[i][s->rank[i]++] = (int64_t)x->valuedouble;
    for (int k = 0; k < WK_SETS; k++) {
      wk_buf *b = &s->set[k].t[i];
      snprintf(b->name, sizeof b->name, "%s", t->name);
      b->numel = s->numel[i];
      /* sets a shape does not use stay unallocated; outputs: none for the inputs op */
      int used = k == 0 || (!e->no_modules && !e->no_plans && (k >= WK_SET_AGAIN || k < nsets - 2));
      if (!used || (t->output && e->no_modules)) continue;
      char what[256];
      snprintf(what, sizeof what, "tensor %s", t->name);
      /* at least 256 bytes of slack past the end, to fill and check, then the grain */
      if (alloc_buf(e, b, s->numel[i] * wk_dtype_size(t->dt) + 256, what, 0)) return -1;
    }
  }
  if (e->no_modules || e->no_plans) return 0;
  if (!e->external && wk_plan_prepare(e, s, field(spec, "reference"), &s->ref, 0)) return -1;
  if (wk_plan_prepare(e, s, field(spec, "candidate"), &s->cand, 1)) return -1;
  return wk_plan_prepare(e, s, field(spec, "candidate"), &s->again, 2);
}

int wk_bench_sets(wk_eval *e, int index) {
  const cJSON *numel = field(cJSON_GetArrayItem(field(e->req, "shapes"), index), "numel");
  size_t one = 0; /* one set's bytes, as wk_shape_setup allocates them */
  for (int i = 0; i < e->ntensors; i++) {
    const cJSON *n = field(numel, e->tensors[i].name);
    if (cJSON_IsNumber(n) && n->valuedouble >= 0 && n->valuedouble <= 1e13)
      one += round_grain((size_t)n->valuedouble * wk_dtype_size(e->tensors[i].dt) + 256);
  }
  size_t free_b = 0, total_b = 0;
  if (DRV->cuMemGetInfo(&free_b, &total_b) != CUDA_SUCCESS) return WK_SETS;
  free_b += e->g->pool_bytes;
  size_t spare = (size_t)1 << 30;
  if (free_b >= spare && (size_t)WK_SETS * one <= free_b - spare) return WK_SETS;
  snprintf(e->sets_note, sizeof e->sets_note,
           "timed on one verified input set: %d sets of %.3g GiB do not fit in the %.3g GiB "
           "free on the GPU",
           WK_SETS, (double)one / (1 << 30), (double)free_b / (1 << 30));
  return WK_SET_AGAIN;
}

void wk_shape_teardown(wk_eval *e, wk_shape *s) {
  wk_plan_release(&s->cand);
  wk_plan_release(&s->again);
  wk_plan_release(&s->ref);
  for (int k = 0; k < WK_SETS; k++)
    for (int i = 0; i < WK_MAX_TENSORS; i++)
      pool_free(e->g, &s->set[k].t[i]);
  for (int i = 0; i < WK_MAX_SCRATCH; i++) {
    pool_free(e->g, &s->cand.scratch[i]);
    pool_free(e->g, &s->again.scratch[i]);
    pool_free(e->g, &s->ref.scratch[i]);
  }
  memset(s, 0, sizeof *s);
}

int wk_plan_run(wk_eval *e, wk_plan *p, int cand, wk_set *set) {
  CUstream st = e->g->stream;
  for (int i = 0; i < p->nscratch; i++)
    if (p->scratch[i].zero) {
      CUresult r = DRV->cuMemsetD8Async(p->scratch[i].ptr, 0, p->scratch_used[i] / 8 * 8, st);
      if (r) return wk_cuda_fail(e, r, "zeroing a scratch buffer");
    }
  for (int i = 0; i < p->nk; i++) {
    wk_launch *l = &p->k[i];
    for (int a = 0; a < l->nargs; a++) /* tensors point into this set */
      if (l->tensor_arg[a] >= 0) l->args[a].v.ptr = set->t[l->tensor_arg[a]].ptr;
    CUresult r = DRV->cuLaunchKernel(l->fn, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                                     l->block[1], l->block[2], l->shared, st, l->argp, NULL);
    if (r) {
      char what[512];
      snprintf(what, sizeof what, "launching %s kernel %s (grid %u,%u,%u block %u,%u,%u shared %u)",
               cand ? "candidate" : "reference", l->name, l->grid[0], l->grid[1], l->grid[2],
               l->block[0], l->block[1], l->block[2], l->shared);
      return cand ? cand_fail(e, r, what) : wk_cuda_fail(e, r, what);
    }
  }
  return 0;
}

int wk_plan_sync(wk_eval *e, int cand, const char *what) {
  CUresult r = DRV->cuStreamSynchronize(e->g->stream);
  if (!r) return 0;
  return cand ? cand_fail(e, r, what) : wk_cuda_fail(e, r, what);
}

int wk_poison_outputs(wk_eval *e, wk_set *set, const uint64_t *pattern) {
  for (int i = 0; i < e->ntensors; i++) {
    if (!e->tensors[i].output) continue;
    CUresult r = devk_pattern(DRV, &e->g->dk, e->g->stream, set->t[i].ptr, set->t[i].bytes,
                              pattern[e->tensors[i].dt]);
    if (r) return wk_cuda_fail(e, r, "poisoning outputs");
  }
  return 0;
}

CUresult wk_digest_set(wk_eval *e, wk_set *set, int outputs, CUdeviceptr slot) {
  CUresult r = CUDA_SUCCESS;
  for (int i = 0; !r && i < e->ntensors; i++)
    if (e->tensors[i].output == outputs)
      r = devk_digest(DRV, &e->g->dk, e->g->stream, set->t[i].ptr, set->t[i].bytes,
                      e->key + 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1), slot);
  return r;
}

int wk_copy_inputs(wk_eval *e, wk_shape *s, int from, int to) {
  for (int i = 0; i < e->ntensors; i++) {
    if (e->tensors[i].output) continue;
    CUresult r = DRV->cuMemcpyDtoDAsync(s->set[to].t[i].ptr, s->set[from].t[i].ptr,
                                        s->set[from].t[i].bytes, e->g->stream);
    if (r) return wk_cuda_fail(e, r, "copying inputs");
  }
  return 0;
}
