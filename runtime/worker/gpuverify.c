/* gpuverify.c: the trial loop of verify (design.md "Verify", docs/worker.md "Threat model") and
 * the host cache of external references. wk_verify_shape is the trial's steps, one line each:
 * fresh inputs drawn on the device from the evaluation's secret seed (NaN past their ends) and
 * copied to a second set; the candidate run on the first set and again on the second (other
 * buffers, other addresses), each under its own poison, its slack checked after each run, the
 * first run's outputs digested between the two and again after (the second may not touch them);
 * then, the candidate done, the inputs drawn again into the reference's set (pristine: no
 * candidate ever had it), the keyed digests of every set's inputs compared; the reference run
 * there (its outputs exist only from here until the comparison); one comparison on the device
 * (unwritten, nondeterministic, wrong). */
#include "gpueval_int.h"
#include "sha256.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DRV (&e->g->drv)

/* ---- reference cache ---------------------------------------------------------------------- */

enum { REFCACHE_MAX = 512 };

typedef struct ref_entry {
  char key[KEVO_HASH_HEX];
  void **bufs;
  size_t n, bytes;
  int ipc;                 /* bufs are wk_ipc_ref (malloc'd), not host copies */
  unsigned long long used; /* LRU tick */
} ref_entry;

struct wk_refcache {
  ref_entry e[REFCACHE_MAX];
  int n;
  size_t bytes, cap;
  unsigned long long tick;
  void (*release)(void *buf, void *ud);
  void *ud;
};

void wk_refcache_set_release(wk_refcache *c, void (*release)(void *buf, void *ud), void *ud) {
  c->release = release;
  c->ud = ud;
}

wk_refcache *wk_refcache_new(size_t cap_bytes) {
  wk_refcache *c = calloc(1, sizeof *c);
  if (c) c->cap = cap_bytes;
  return c;
}

static void entry_drop(wk_refcache *c, int i) {
  for (size_t j = 0; j < c->e[i].n; j++)
    if (c->release && c->e[i].bufs[j] && !c->e[i].ipc)
      c->release(c->e[i].bufs[j], c->ud);
    else
      free(c->e[i].bufs[j]);
  free(c->e[i].bufs);
  c->bytes -= c->e[i].bytes;
  c->e[i] = c->e[--c->n];
}

void wk_refcache_free(wk_refcache *c) {
  if (!c) return;
  while (c->n)
    entry_drop(c, c->n - 1);
  free(c);
}

void **wk_refcache_get(wk_refcache *c, const char key[KEVO_HASH_HEX], int *ipc) {
  for (int i = 0; i < c->n; i++)
    if (!strcmp(c->e[i].key, key)) {
      c->e[i].used = ++c->tick;
      if (ipc) *ipc = c->e[i].ipc;
      return c->e[i].bufs;
    }
  return NULL;
}

void wk_refcache_put(wk_refcache *c, const char key[KEVO_HASH_HEX], void **bufs, size_t n,
                     size_t bytes, int ipc) {
  for (int i = 0; i < c->n; i++)
    if (!strcmp(c->e[i].key, key)) entry_drop(c, i);
  /* evict the least recently used until the new entry fits (or nothing else is left) */
  while (c->n && (c->bytes + bytes > c->cap || c->n == REFCACHE_MAX)) {
    int old = 0;
    for (int i = 1; i < c->n; i++)
      if (c->e[i].used < c->e[old].used) old = i;
    entry_drop(c, old);
  }
  ref_entry *x = &c->e[c->n++];
  memcpy(x->key, key, KEVO_HASH_HEX);
  x->bufs = bufs;
  x->n = n;
  x->bytes = bytes;
  x->ipc = ipc;
  x->used = ++c->tick;
  c->bytes += bytes;
}

/* Host buffers of the cache are page-locked where the driver allows (cuMemHostAlloc), so the
 * reference's outputs go down and up at DMA speed (a 512 MiB output in ~10 ms rather than ~25
 * to 50 ms through the driver's pageable staging); else plain malloc. A 64-byte header before
 * the data says which, so the release knows. */
enum { HOST_HDR = 64 };

void *wk_host_alloc(kevo_gpu *g, size_t bytes) {
  unsigned char *p = NULL;
  if (g->drv.cuMemHostAlloc((void **)&p, bytes + HOST_HDR, 0) == CUDA_SUCCESS && p) {
    p[0] = 1;
  } else {
    p = malloc(bytes + HOST_HDR);
    if (!p) return NULL;
    p[0] = 0;
  }
  return p + HOST_HDR;
}

void wk_host_release(void *buf, void *ud) {
  kevo_gpu *g = ud;
  unsigned char *p = (unsigned char *)buf - HOST_HDR;
  if (p[0] == 1)
    g->drv.cuMemFreeHost(p);
  else
    free(p);
}

/* ---- inputs -------------------------------------------------------------------------------- */

static uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* The generator key of one input: depends on (seed, shape label, trial, tensor name) only. The
 * seed is secret (drawn per evaluation) unless the request fixes it. */
static uint64_t input_key(wk_eval *e, wk_shape *s, int trial, int tensor) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a over label and name */
  for (const char *p = s->label; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ull;
  h = (h ^ '/') * 1099511628211ull;
  for (const char *p = e->tensors[tensor].name; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ull;
  return mix64(mix64(e->seed) ^ mix64(h) ^ (uint64_t)trial * 0xD1B54A32D192ED03ull);
}

/* The init of input t at (s, trial): the stress trial's when it names t, else the shape's. */
static void init_of(wk_eval *e, wk_shape *s, int trial, int t, int *kind, double *a, double *b) {
  const wk_tensor *x = &e->tensors[t];
  const cJSON *in =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s->spec, "init"), x->name);
  if (trial < s->nstress) {
    const cJSON *st =
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(s->spec, "stress"), trial);
    const cJSON *si = cJSON_GetObjectItemCaseSensitive(st, x->name);
    if (si) in = si;
  }
  const char *k = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(in, "kind"));
  const cJSON *ja = cJSON_GetObjectItemCaseSensitive(in, "a");
  const cJSON *jb = cJSON_GetObjectItemCaseSensitive(in, "b");
  *kind = !k                      ? x->kind
          : !strcmp(k, "uniform") ? DK_UNIFORM
          : !strcmp(k, "randint") ? DK_RANDINT
                                  : DK_NORMAL;
  *a = cJSON_IsNumber(ja) ? ja->valuedouble : x->a;
  *b = cJSON_IsNumber(jb) ? jb->valuedouble : x->b;
}

int wk_gen_inputs(wk_eval *e, wk_shape *s, int set, int trial) {
  for (int i = 0; i < e->ntensors; i++) {
    wk_tensor *t = &e->tensors[i];
    if (t->output) continue;
    wk_buf *b = &s->set[set].t[i];
    int kind;
    double lo, hi;
    init_of(e, s, trial, i, &kind, &lo, &hi);
    /* NaN (or a sentinel) from the word holding the last element on, then the elements */
    uint64_t end = b->numel * wk_dtype_size(t->dt) / 8 * 8;
    CUresult r =
        devk_pattern(DRV, &e->g->dk, e->g->stream, b->ptr + end, b->bytes - end, wk_pad_nan[t->dt]);
    if (!r)
      r = devk_fill(DRV, &e->g->dk, e->g->stream, b->ptr, b->numel, t->dt,
                    input_key(e, s, trial, i), kind, lo, hi);
    if (r) return wk_cuda_fail(e, r, "drawing inputs");
  }
  return 0;
}

/* ---- the external reference's outputs ------------------------------------------------------ */

static void hash_json(kevo_sha256 *h, const cJSON *j) {
  char *text = j ? cJSON_PrintUnformatted(j) : NULL;
  if (text) kevo_sha256_update(h, text, strlen(text));
  kevo_sha256_update(h, "\n", 1);
  free(text);
}

void wk_ref_key(wk_eval *e, wk_shape *s, int trial, char out[KEVO_HASH_HEX]) {
  kevo_sha256 h;
  kevo_sha256_init(&h);
  char head[128];
  snprintf(head, sizeof head, "%s %llu %d\n", e->ref_hash, (unsigned long long)e->seed, trial);
  kevo_sha256_update(&h, head, strlen(head));
  kevo_sha256_update(&h, s->label, strlen(s->label) + 1);
  hash_json(&h, cJSON_GetObjectItemCaseSensitive(e->req, "tensors"));
  hash_json(&h, cJSON_GetObjectItemCaseSensitive(s->spec, "numel"));
  hash_json(&h, cJSON_GetObjectItemCaseSensitive(s->spec, "init"));
  hash_json(&h, cJSON_GetObjectItemCaseSensitive(s->spec, "stress"));
  hash_json(&h, cJSON_GetObjectItemCaseSensitive(s->spec, "reference"));
  kevo_sha256_final_hex(&h, out);
}

/* The reference's outputs of this trial into the reference set's outputs: its plan run on its
 * own pristine inputs, or (external) the cached host copy uploaded. */
static int reference_outputs(wk_eval *e, wk_shape *s, int trial) {
  wk_set *ref = &s->set[WK_SET_REF];
  if (!e->external) {
    if (wk_poison_outputs(e, ref, wk_poison_a) || wk_plan_run(e, &s->ref, 0, ref) ||
        wk_plan_sync(e, 0, "running the reference"))
      return -1;
    return 0;
  }
  char key[KEVO_HASH_HEX];
  wk_ref_key(e, s, trial, key);
  int ipc = 0;
  void **hit = wk_refcache_get(e->g->refs, key, &ipc);
  if (!hit) /* checked before the first trial; evicted since (cache too small) */
    return wk_fail(e, "error", "verify",
                   "E_NOREF: the external reference outputs of shape %s, trial %d are not in the "
                   "worker's cache (raise KEVO_WORKER_REF_CACHE_MB)",
                   s->label, trial + 1);
  if (wk_poison_outputs(e, ref, wk_poison_a)) return -1;
  if (ipc) return wk_ipc_fetch(e, ref, hit);
  for (int i = 0; i < e->ntensors; i++) {
    if (!e->tensors[i].output) continue;
    CUresult r = DRV->cuStreamSynchronize(e->g->stream);
    if (!r)
      r = DRV->cuMemcpyHtoD(ref->t[i].ptr, hit[i],
                            ref->t[i].numel * wk_dtype_size(e->tensors[i].dt));
    if (r) return wk_cuda_fail(e, r, "uploading reference outputs");
  }
  return 0;
}

/* ---- slack and digests --------------------------------------------------------------------- */

/* Counts the bytes in [from, to) of p that no longer hold the pattern; 0 when none. */
static int changed_bytes(wk_eval *e, CUdeviceptr p, uint64_t from, uint64_t to, uint64_t pattern,
                         uint64_t *bad) {
  CUdeviceptr word = e->g->stats + 192;
  *bad = 0;
  CUresult r = DRV->cuMemsetD32Async(word, 0, 2, e->g->stream);
  if (!r && to > from) r = devk_guard(DRV, &e->g->dk, e->g->stream, p, from, to, pattern, word);
  if (!r) r = DRV->cuStreamSynchronize(e->g->stream);
  if (!r) r = DRV->cuMemcpyDtoH(bad, word, 8);
  return r ? wk_cuda_fail(e, r, "checking slack") : 0;
}

int wk_slack_intact(wk_eval *e, wk_shape *s, wk_set *set, const wk_plan *plan,
                    const uint64_t *pattern, const char *stage) {
  uint64_t bad = 0;
  for (int i = 0; i < e->ntensors; i++) {
    if (!e->tensors[i].output) continue;
    uint64_t end = set->t[i].numel * wk_dtype_size(e->tensors[i].dt);
    if (changed_bytes(e, set->t[i].ptr, end, set->t[i].bytes, pattern[e->tensors[i].dt], &bad))
      return -1;
    if (bad)
      return wk_fail(e, "wrong", stage,
                     "the candidate wrote past the end of output %s (%llu elements; %llu bytes "
                     "of the %llu after it in its allocation changed; shape %s)",
                     e->tensors[i].name, (unsigned long long)set->t[i].numel,
                     (unsigned long long)bad, (unsigned long long)(set->t[i].bytes - end),
                     s->label);
  }
  for (int i = 0; i < plan->nscratch; i++) {
    const wk_buf *b = &plan->scratch[i];
    uint64_t from = (plan->scratch_used[i] + 7) / 8 * 8;
    if (changed_bytes(e, b->ptr, from, b->bytes, wk_poison_a[DK_U8], &bad)) return -1;
    if (bad)
      return wk_fail(e, "wrong", stage,
                     "the candidate wrote past the end of its scratch buffer %s (%llu bytes "
                     "asked for; %llu bytes after them changed; shape %s)",
                     b->name, (unsigned long long)plan->scratch_used[i], (unsigned long long)bad,
                     s->label);
  }
  return 0;
}

/* The digest slots of one trial, in the stats buffer (after the comparison's stats). Each is
 * zeroed only once the candidate's run before it has finished, never before a candidate run:
 * a kernel that writes into the slots (it may find them) cannot preload them. D_OUT1 is taken
 * between the two runs and D_OUT1_AFTER2 after the second: a second run that writes into the
 * first run's outputs (through a pointer it kept from that run) changes them. */
enum { D_IN, D_IN_AFTER1, D_OUT1, D_IN_AFTER2, D_OUT1_AFTER2, D_SLOTS };

static CUdeviceptr slot(wk_eval *e, int k) {
  return e->g->stats + 128 + 8 * (CUdeviceptr)k;
}

/* ---- comparison ---------------------------------------------------------------------------- */

static double half_to_double(uint16_t h) {
  int ex = (h >> 10) & 31, man = h & 1023;
  double v = ex == 0    ? ldexp(man, -24)
             : ex == 31 ? (man ? NAN : INFINITY)
                        : ldexp(man + 1024, ex - 25);
  return h & 0x8000 ? -v : v;
}

static double elem_to_double(const void *p, int dt) {
  uint32_t u32;
  uint16_t u16;
  switch (dt) {
  case DK_F32: {
    float f;
    memcpy(&f, p, 4);
    return f;
  }
  case DK_F16:
    memcpy(&u16, p, 2);
    return half_to_double(u16);
  case DK_BF16: {
    memcpy(&u16, p, 2);
    u32 = (uint32_t)u16 << 16;
    float f;
    memcpy(&f, &u32, 4);
    return f;
  }
  case DK_F64: {
    double d;
    memcpy(&d, p, 8);
    return d;
  }
  case DK_I32: {
    int32_t i;
    memcpy(&i, p, 4);
    return i;
  }
  case DK_I64: {
    int64_t i;
    memcpy(&i, p, 8);
    return (double)i;
  }
  case DK_I8:
    return *(const signed char *)p;
  case DK_F8E4M3: {
    unsigned b = *(const unsigned char *)p, ex = (b >> 3) & 15, man = b & 7;
    double v = ex == 15 && man == 7 ? NAN : ex ? ldexp(8 + man, (int)ex - 10) : ldexp(man, -9);
    return b & 0x80 ? -v : v;
  }
  case DK_F8E5M2:
    return half_to_double((uint16_t)(*(const unsigned char *)p << 8));
  default: /* u8, bool */
    return *(const unsigned char *)p;
  }
}

static void tolerance(wk_eval *e, int dt, double *atol, double *rtol) {
  static const double dflt[DK_COUNT][2] = {
      [DK_F32] = {1e-5, 1e-5},   [DK_F16] = {1e-3, 1e-3},       [DK_BF16] = {1e-2, 1e-2},
      [DK_F64] = {1e-12, 1e-12}, [DK_F8E4M3] = {0x1p-9, 0.125}, [DK_F8E5M2] = {0x1p-16, 0.25}};
  *atol = dflt[dt][0];
  *rtol = dflt[dt][1];
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(e->req, "verify");
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(v, "tolerance"), wk_dtype_name(dt));
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(t, "atol");
  const cJSON *r = cJSON_GetObjectItemCaseSensitive(t, "rtol");
  if (cJSON_IsNumber(a) && a->valuedouble >= 0) *atol = a->valuedouble;
  if (cJSON_IsNumber(r) && r->valuedouble >= 0) *rtol = r->valuedouble;
  if (wk_dtype_is_int(dt)) *atol = *rtol = 0; /* integers and bool: exact */
}

/* Records element `flat` of output i as the worst one (reads both values back). */
static int set_worst(wk_eval *e, wk_shape *s, int i, wk_set *actual, uint64_t flat) {
  int dt = e->tensors[i].dt;
  size_t esz = wk_dtype_size(dt);
  unsigned char act[8] = {0}, exp[8] = {0};
  CUresult r = DRV->cuMemcpyDtoH(act, actual->t[i].ptr + flat * esz, esz);
  if (!r) r = DRV->cuMemcpyDtoH(exp, s->set[WK_SET_REF].t[i].ptr + flat * esz, esz);
  if (r) return wk_cuda_fail(e, r, "reading an output element");
  wk_worst *w = &e->worst;
  w->have = 1;
  snprintf(w->shape, sizeof w->shape, "%s", s->label);
  snprintf(w->tensor, sizeof w->tensor, "%s", e->tensors[i].name);
  w->flat = flat;
  w->rank = s->rank[i] > 0 ? s->rank[i] : 1;
  uint64_t rest = flat;
  for (int d = w->rank - 1; d >= 0; d--) {
    int64_t extent = s->rank[i] > 0 ? s->dims[i][d] : 0;
    w->index[d] = extent > 0 ? (int64_t)(rest % (uint64_t)extent) : (int64_t)rest;
    rest = extent > 0 ? rest / (uint64_t)extent : 0;
  }
  w->expected = elem_to_double(exp, dt);
  w->actual = elem_to_double(act, dt);
  w->abs_err = fabs(w->actual - w->expected);
  w->rel_err = w->expected != 0 ? w->abs_err / fabs(w->expected) : (w->abs_err ? INFINITY : 0);
  return 0;
}

/* Compares the second run's outputs (set `again`, poisoned with pb) with the first run's (set
 * `first`, poisoned with pa) and the reference's (the reference set). */
static int compare_outputs(wk_eval *e, wk_shape *s, wk_set *first, wk_set *again,
                           const uint64_t *pa, const uint64_t *pb, int trial) {
  devk_stats st[WK_MAX_TENSORS];
  memset(st, 0, sizeof st);
  for (int i = 0; i < e->ntensors; i++) {
    wk_tensor *t = &e->tensors[i];
    if (!t->output) continue;
    devk_cmp c = {.actual = again->t[i].ptr,
                  .snapshot = first->t[i].ptr,
                  .expected = s->set[WK_SET_REF].t[i].ptr,
                  .n = again->t[i].numel,
                  .dt = t->dt,
                  .poison_a = pa[t->dt],
                  .poison_b = pb[t->dt],
                  .stats = e->g->stats};
    tolerance(e, t->dt, &c.atol, &c.rtol);
    CUresult r = devk_compare(DRV, &e->g->dk, e->g->stream, &c, &st[i]);
    if (r) return wk_cuda_fail(e, r, "comparing outputs");
    e->mismatches += st[i].mismatches;
  }
  char where[300];
  snprintf(where, sizeof where, "%sshape %s, trial %d%s", s->held_out ? "held-out " : "", s->label,
           trial + 1, trial < s->nstress ? " (stress inputs)" : "");
  for (int i = 0; i < e->ntensors; i++)
    if (e->tensors[i].output && st[i].unwritten) {
      if (set_worst(e, s, i, again, st[i].first_unwritten)) return -1;
      return wk_fail(e, "unwritten", "verify",
                     "%llu of %llu elements of %s were never written (first at flat index "
                     "%llu; %s)",
                     (unsigned long long)st[i].unwritten, (unsigned long long)again->t[i].numel,
                     e->tensors[i].name, (unsigned long long)st[i].first_unwritten, where);
    }
  for (int i = 0; i < e->ntensors; i++)
    if (e->tensors[i].output && st[i].nondet) {
      if (set_worst(e, s, i, again, st[i].first_nondet)) return -1;
      return wk_fail(e, "nondeterministic", "verify",
                     "two runs on the same inputs (in other buffers) differ in %llu of %llu "
                     "elements of %s (first at flat index %llu; %s)",
                     (unsigned long long)st[i].nondet, (unsigned long long)again->t[i].numel,
                     e->tensors[i].name, (unsigned long long)st[i].first_nondet, where);
    }
  int worst_i = -1;
  for (int i = 0; i < e->ntensors; i++)
    if (e->tensors[i].output && st[i].worst_index != UINT64_MAX &&
        (worst_i < 0 || st[i].worst_key > st[worst_i].worst_key))
      worst_i = i;
  if (worst_i >= 0 && (st[worst_i].worst_key > e->worst_key || !e->worst.have)) {
    e->worst_key = st[worst_i].worst_key;
    if (set_worst(e, s, worst_i, again, st[worst_i].worst_index)) return -1;
  }
  for (int i = 0; i < e->ntensors; i++)
    if (e->tensors[i].output && st[i].mismatches) {
      if (i != worst_i && set_worst(e, s, i, again, st[i].worst_index)) return -1;
      wk_worst *w = &e->worst;
      return wk_fail(e, "wrong", "verify",
                     "%llu of %llu elements of %s differ from the reference (%llu NaN); worst "
                     "at flat index %llu: expected %.9g, got %.9g (%s)",
                     (unsigned long long)st[i].mismatches, (unsigned long long)again->t[i].numel,
                     e->tensors[i].name, (unsigned long long)st[i].nans,
                     (unsigned long long)w->flat, w->expected, w->actual, where);
    }
  return 0;
}

/* ---- the trial loop ------------------------------------------------------------------------ */

/* Runs the candidate on set k (outputs poisoned with `pattern` first) and waits for it: only
 * then may a digest, whose key is its argument, be launched. */
static int run_candidate(wk_eval *e, wk_shape *s, wk_plan *plan, int k, const uint64_t *pattern,
                         const char *what) {
  if (wk_poison_outputs(e, &s->set[k], pattern) || wk_plan_run(e, plan, 1, &s->set[k]) ||
      wk_plan_sync(e, 1, what))
    return -1;
  return wk_slack_intact(e, s, &s->set[k], plan, pattern, "verify");
}

static int digest(wk_eval *e, wk_set *set, int outputs, int k) {
  CUresult r = wk_digest_set(e, set, outputs, slot(e, k));
  return r ? wk_cuda_fail(e, r, "digesting") : 0;
}

/* The name of the first input whose contents differ between sets a and b (by digest). */
static const char *changed_input(wk_eval *e, wk_shape *s, int a, int b) {
  for (int i = 0; i < e->ntensors; i++) {
    if (e->tensors[i].output) continue;
    uint64_t d[2] = {0, 0};
    CUresult r = DRV->cuMemsetD32Async(slot(e, 6), 0, 4, e->g->stream);
    for (int k = 0; k < 2 && !r; k++)
      r = devk_digest(DRV, &e->g->dk, e->g->stream, s->set[k ? b : a].t[i].ptr,
                      s->set[a].t[i].bytes, e->key, slot(e, 6 + k));
    if (!r) r = DRV->cuStreamSynchronize(e->g->stream);
    if (!r) r = DRV->cuMemcpyDtoH(d, slot(e, 6), 16);
    if (r || d[0] != d[1]) return e->tensors[i].name;
  }
  return "?";
}

/* Reads the trial's digests back and checks every input digest equals the first. */
static int inputs_unchanged(wk_eval *e, wk_shape *s, int first, int trial, uint64_t *d) {
  CUresult r = DRV->cuStreamSynchronize(e->g->stream);
  if (!r) r = DRV->cuMemcpyDtoH(d, slot(e, 0), 8 * D_SLOTS);
  /* no digest stays on the device for a later launch to read */
  if (!r) r = DRV->cuMemsetD32Async(slot(e, 0), 0, 2 * D_SLOTS, e->g->stream);
  if (r) return wk_cuda_fail(e, r, "reading digests");
  if (d[D_OUT1_AFTER2] != d[D_OUT1])
    return wk_fail(e, "wrong", "verify",
                   "the candidate's second run (on other buffers) wrote into the outputs of its "
                   "first run: a kernel may write only its own outputs (their keyed digest "
                   "changed between the runs; shape %s, trial %d)",
                   s->label, trial + 1);
  if (d[D_IN_AFTER1] != d[D_IN] || d[D_IN_AFTER2] != d[D_IN])
    return wk_fail(e, "input_modified", "verify",
                   "the candidate wrote to input %s during its %s run (its keyed digest over the "
                   "whole allocation changed; shape %s, trial %d)",
                   d[D_IN_AFTER1] != d[D_IN] ? changed_input(e, s, first, WK_SET_REF)
                                             : changed_input(e, s, WK_SET_AGAIN, first),
                   d[D_IN_AFTER1] != d[D_IN] ? "first" : "second", s->label, trial + 1);
  return 0;
}

int wk_verify_shape(wk_eval *e, wk_shape *s) {
  for (int trial = 0; trial < e->trials; trial++) {
    int first = s->set[1].t[0].ptr ? trial % WK_ROTATE : 0;
    wk_set *p = &s->set[first], *again = &s->set[WK_SET_AGAIN], *ref = &s->set[WK_SET_REF];
    uint64_t d[D_SLOTS];
    if (wk_gen_inputs(e, s, first, trial) || wk_copy_inputs(e, s, first, WK_SET_AGAIN)) return -1;
    /* once per evaluation the twins run once more than the first modules, so a kernel whose
     * answer depends on how often it was called cannot count its way to agreeing runs */
    if (!e->twin_offset) {
      e->twin_offset = 1;
      if (run_candidate(e, s, &s->again, WK_SET_AGAIN, wk_poison_b, "running the candidate"))
        return -1;
    }
    if (run_candidate(e, s, &s->cand, first, wk_poison_a, "running the candidate")) return -1;
    /* the first run is done: its outputs' digest, before the second run can touch them */
    CUresult r = DRV->cuMemsetD32Async(slot(e, 0), 0, 2 * D_SLOTS, e->g->stream);
    if (r) return wk_cuda_fail(e, r, "clearing digests");
    if (digest(e, p, 1, D_OUT1)) return -1;
    /* trial 0's second run is the twins': nothing the first run kept (a memo keyed by the
     * inputs' contents or pointers, a pointer to its outputs) can serve it; the other trials'
     * second runs are the first modules', so the calls a stateful kernel sees before the timing
     * loop are nearly all on the modules the loop times */
    if (run_candidate(e, s, trial == 0 ? &s->again : &s->cand, WK_SET_AGAIN, wk_poison_b,
                      "running the candidate again"))
      return -1;
    /* the candidate is done: the inputs are drawn again for the reference, pristine; the other
     * slots are cleared only now (the second run may have written into them) */
    if (wk_gen_inputs(e, s, WK_SET_REF, trial)) return -1;
    r = DRV->cuMemsetD32Async(slot(e, 0), 0, 2 * D_OUT1, e->g->stream);
    if (!r)
      r = DRV->cuMemsetD32Async(slot(e, D_IN_AFTER2), 0, 2 * (D_SLOTS - D_IN_AFTER2), e->g->stream);
    if (r) return wk_cuda_fail(e, r, "clearing digests");
    if (digest(e, ref, 0, D_IN) || digest(e, p, 0, D_IN_AFTER1) ||
        digest(e, again, 0, D_IN_AFTER2) || digest(e, p, 1, D_OUT1_AFTER2))
      return -1;
    if (inputs_unchanged(e, s, first, trial, d)) return -1;
    if (reference_outputs(e, s, trial)) return -1;
    if (compare_outputs(e, s, p, again, wk_poison_a, wk_poison_b, trial)) return -1;
    if (wk_poison_outputs(e, ref, wk_poison_b)) return -1; /* the reference's outputs go */
    p->in_digest = d[D_IN];
    p->out_digest = d[D_OUT1];
    p->verified = 1;
    e->trials_done++;
    if (trial < s->nstress) e->stress_done++;
  }
  return 0;
}
