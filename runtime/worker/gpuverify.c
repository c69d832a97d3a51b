/* gpuverify.c: the trial loop of verify (design.md "Verify") and the reference cache.
 * Per trial: fresh inputs drawn on the device from (seed, shape, trial); the reference's
 * outputs, from the host cache or computed, copied to the host and never resident while the
 * candidate runs; the candidate run twice under different poison; inputs checksummed around
 * both runs; then one comparison on the device (unwritten, nondeterministic, wrong). */
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
  char key[65];
  void **bufs;
  size_t n, bytes;
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
    if (c->release && c->e[i].bufs[j])
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

void **wk_refcache_get(wk_refcache *c, const char key[65]) {
  for (int i = 0; i < c->n; i++)
    if (!strcmp(c->e[i].key, key)) {
      c->e[i].used = ++c->tick;
      return c->e[i].bufs;
    }
  return NULL;
}

void wk_refcache_put(wk_refcache *c, const char key[65], void **bufs, size_t n, size_t bytes) {
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
  memcpy(x->key, key, 65);
  x->bufs = bufs;
  x->n = n;
  x->bytes = bytes;
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

/* ---- inputs, reference, checksums ---------------------------------------------------------- */

static uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* The generator key of one input: depends on (seed, shape label, trial, tensor name) only, so
 * the same trial of the same shape gets the same inputs in every evaluation of a run. */
static uint64_t input_key(wk_eval *e, wk_shape *s, int trial, int tensor) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a over label and name */
  for (const char *p = s->label; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ull;
  h = (h ^ '/') * 1099511628211ull;
  for (const char *p = e->tensors[tensor].name; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ull;
  return mix64(mix64(e->seed) ^ mix64(h) ^ (uint64_t)trial * 0xD1B54A32D192ED03ull);
}

int wk_gen_inputs(wk_eval *e, wk_shape *s, int trial) {
  for (int i = 0; i < e->ntensors; i++) {
    wk_tensor *t = &e->tensors[i];
    if (t->output) continue;
    /* the shape's own bounds when the request gives them (randint(0, C) must follow C) */
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(s->spec, "init"), t->name);
    const cJSON *ja = cJSON_GetObjectItemCaseSensitive(in, "a");
    const cJSON *jb = cJSON_GetObjectItemCaseSensitive(in, "b");
    double a = cJSON_IsNumber(ja) ? ja->valuedouble : t->a;
    double b = cJSON_IsNumber(jb) ? jb->valuedouble : t->b;
    CUresult r = devk_fill(DRV, &e->g->dk, e->g->stream, s->t[i].ptr, s->t[i].numel, t->dt,
                           input_key(e, s, trial, i), t->kind, a, b);
    if (r) return wk_cuda_fail(e, r, "drawing inputs");
  }
  return 0;
}

static void hash_json(kevo_sha256 *h, const cJSON *j) {
  char *text = j ? cJSON_PrintUnformatted(j) : NULL;
  if (text) kevo_sha256_update(h, text, strlen(text));
  kevo_sha256_update(h, "\n", 1);
  free(text);
}

void wk_ref_key(wk_eval *e, wk_shape *s, int trial, char out[65]) {
  kevo_sha256 h;
  kevo_sha256_init(&h);
  char head[128];
  snprintf(head, sizeof head, "%s %llu %d\n", e->ref_hash, (unsigned long long)e->seed, trial);
  kevo_sha256_update(&h, head, strlen(head));
  kevo_sha256_update(&h, s->label, strlen(s->label) + 1);
  hash_json(&h, cJSON_GetObjectItemCaseSensitive(e->req, "tensors"));
  hash_json(&h, cJSON_GetObjectItemCaseSensitive(s->spec, "numel"));
  hash_json(&h, cJSON_GetObjectItemCaseSensitive(s->spec, "init"));
  hash_json(&h, cJSON_GetObjectItemCaseSensitive(s->spec, "reference"));
  kevo_sha256_final_hex(&h, out);
}

/* The reference's outputs for this trial (inputs already drawn), as host buffers. */
static void **reference_outputs(wk_eval *e, wk_shape *s, int trial) {
  char key[65];
  wk_ref_key(e, s, trial, key);
  void **hit = wk_refcache_get(e->g->refs, key);
  if (hit) return hit;
  if (e->external) /* checked before the first trial; evicted since (cache too small) */
    return wk_fail(e, "error", "verify",
                   "E_NOREF: the external reference outputs of shape %s, trial %d are not in the "
                   "worker's cache (raise KEVO_WORKER_REF_CACHE_MB)",
                   s->label, trial + 1),
           NULL;
  if (wk_poison_outputs(e, s, wk_poison_a) || wk_plan_run(e, &s->ref, 0) ||
      wk_plan_sync(e, 0, "running the reference"))
    return NULL;
  void **bufs = calloc((size_t)e->ntensors, sizeof *bufs);
  size_t total = 0;
  if (!bufs) return wk_fail(e, "error", "verify", "no host memory for reference outputs"), NULL;
  for (int i = 0; i < e->ntensors; i++) {
    if (!e->tensors[i].output) continue;
    size_t bytes = s->t[i].numel * wk_dtype_size(e->tensors[i].dt);
    bufs[i] = wk_host_alloc(e->g, bytes ? bytes : 1);
    CUresult r = bufs[i] ? DRV->cuMemcpyDtoH(bufs[i], s->t[i].ptr, bytes) : CUDA_SUCCESS;
    if (!bufs[i] || r) {
      for (int j = 0; j <= i; j++)
        if (bufs[j]) wk_host_release(bufs[j], e->g);
      free(bufs);
      if (r) return wk_cuda_fail(e, r, "copying reference outputs"), NULL;
      return wk_fail(e, "error", "verify", "no host memory for reference outputs"), NULL;
    }
    total += bytes;
  }
  wk_refcache_put(e->g->refs, key, bufs, (size_t)e->ntensors, total);
  return bufs;
}

static int checksum_inputs(wk_eval *e, wk_shape *s, uint64_t *sums) {
  CUdeviceptr word = e->g->stats + 128;
  for (int i = 0; i < e->ntensors; i++) {
    if (e->tensors[i].output) continue;
    CUresult r = DRV->cuMemsetD32Async(word, 0, 2, e->g->stream);
    if (!r) r = devk_checksum(DRV, &e->g->dk, e->g->stream, s->t[i].ptr, s->t[i].bytes, word);
    if (!r) r = DRV->cuStreamSynchronize(e->g->stream);
    if (!r) r = DRV->cuMemcpyDtoH(&sums[i], word, 8);
    if (r) return wk_cuda_fail(e, r, "checksumming inputs");
  }
  return 0;
}

/* Fails (wrong) when the candidate wrote past the end of an output: each output buffer has a
 * guard band of 256 bytes or more after its last element, filled by the poisoning with the
 * pattern's bytes, which must all still be there after a run. */
static int guard_intact(wk_eval *e, wk_shape *s, const uint64_t *pattern, const char *stage) {
  CUdeviceptr word = e->g->stats + 128;
  for (int i = 0; i < e->ntensors; i++) {
    if (!e->tensors[i].output) continue;
    uint64_t end = s->t[i].numel * wk_dtype_size(e->tensors[i].dt), bad = 0;
    CUresult r = DRV->cuMemsetD32Async(word, 0, 2, e->g->stream);
    if (!r)
      r = devk_guard(DRV, &e->g->dk, e->g->stream, s->t[i].ptr, end, s->t[i].bytes,
                     pattern[e->tensors[i].dt], word);
    if (!r) r = DRV->cuStreamSynchronize(e->g->stream);
    if (!r) r = DRV->cuMemcpyDtoH(&bad, word, 8);
    if (r) return wk_cuda_fail(e, r, "checking output guard bands");
    if (bad)
      return wk_fail(e, "wrong", stage,
                     "the candidate wrote past the end of output %s (%llu elements; %llu bytes "
                     "of the guard band after it changed; shape %s)",
                     e->tensors[i].name, (unsigned long long)s->t[i].numel, (unsigned long long)bad,
                     s->label);
  }
  return 0;
}

/* Runs the candidate once on outputs poisoned with `pattern`, then checks the guard bands. */
static int run_candidate(wk_eval *e, wk_shape *s, const uint64_t *pattern, const char *what,
                         const char *stage) {
  if (wk_poison_outputs(e, s, pattern) || wk_plan_run(e, &s->cand, 1) || wk_plan_sync(e, 1, what))
    return -1;
  return guard_intact(e, s, pattern, stage);
}

static int inputs_unchanged(wk_eval *e, wk_shape *s, const uint64_t *before, int trial,
                            const char *run) {
  uint64_t after[WK_MAX_TENSORS] = {0};
  if (checksum_inputs(e, s, after)) return -1;
  for (int i = 0; i < e->ntensors; i++)
    if (!e->tensors[i].output && after[i] != before[i])
      return wk_fail(e, "input_modified", "verify",
                     "the candidate wrote to input %s during its %s run (shape %s, trial %d)",
                     e->tensors[i].name, run, s->label, trial + 1);
  return 0;
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
  default:
    return *(const unsigned char *)p;
  }
}

static void tolerance(wk_eval *e, int dt, double *atol, double *rtol) {
  static const double dflt[DK_COUNT][2] = {[DK_F32] = {1e-5, 1e-5},
                                           [DK_F16] = {1e-3, 1e-3},
                                           [DK_BF16] = {1e-2, 1e-2},
                                           [DK_F64] = {1e-12, 1e-12}};
  *atol = dflt[dt][0];
  *rtol = dflt[dt][1];
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(e->req, "verify");
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(v, "tolerance"), wk_dtype_name(dt));
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(t, "atol");
  const cJSON *r = cJSON_GetObjectItemCaseSensitive(t, "rtol");
  if (cJSON_IsNumber(a) && a->valuedouble >= 0) *atol = a->valuedouble;
  if (cJSON_IsNumber(r) && r->valuedouble >= 0) *rtol = r->valuedouble;
  if (dt == DK_I32 || dt == DK_I64 || dt == DK_U8) *atol = *rtol = 0; /* integers: exact */
}

/* Records element `flat` of output i as the worst one (reads the actual value back). */
static int set_worst(wk_eval *e, wk_shape *s, int i, const void *expected, uint64_t flat) {
  int dt = e->tensors[i].dt;
  size_t esz = wk_dtype_size(dt);
  unsigned char act[8] = {0};
  CUresult r = DRV->cuMemcpyDtoH(act, s->t[i].ptr + flat * esz, esz);
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
  w->expected = elem_to_double((const unsigned char *)expected + flat * esz, dt);
  w->actual = elem_to_double(act, dt);
  w->abs_err = fabs(w->actual - w->expected);
  w->rel_err = w->expected != 0 ? w->abs_err / fabs(w->expected) : (w->abs_err ? INFINITY : 0);
  return 0;
}

/* Compares the outputs in place (second run, poisoned with pb) with the first run's snapshot
 * (poisoned with pa) and the reference ref. With snapshot == 0 the outputs stand for both
 * runs (pa == pb): one run's unwritten elements and mismatches are judged. After the timing
 * loop (stage "bench") every failure is the verdict wrong. */
static int compare_outputs(wk_eval *e, wk_shape *s, void **ref, const uint64_t *pa,
                           const uint64_t *pb, int snapshot, const char *stage, int trial) {
  devk_stats st[WK_MAX_TENSORS];
  memset(st, 0, sizeof st);
  int bench = !strcmp(stage, "bench");
  for (int i = 0; i < e->ntensors; i++) {
    wk_tensor *t = &e->tensors[i];
    if (!t->output) continue;
    size_t bytes = s->t[i].numel * wk_dtype_size(t->dt);
    CUdeviceptr exp = 0;
    CUresult r = DRV->cuMemAlloc(&exp, s->t[i].bytes);
    if (!r) r = DRV->cuMemcpyHtoD(exp, ref[i], bytes);
    devk_cmp c = {.actual = s->t[i].ptr,
                  .snapshot = snapshot ? s->snap[i].ptr : s->t[i].ptr,
                  .expected = exp,
                  .n = s->t[i].numel,
                  .dt = t->dt,
                  .poison_a = pa[t->dt],
                  .poison_b = pb[t->dt],
                  .stats = e->g->stats};
    tolerance(e, t->dt, &c.atol, &c.rtol);
    if (!r) r = devk_compare(DRV, &e->g->dk, e->g->stream, &c, &st[i]);
    /* the reference leaves the device again: scrubbed first, so a later allocation that
     * reuses this memory finds no trace of it */
    if (exp && !r) r = DRV->cuMemsetD8Async(exp, 0, s->t[i].bytes, e->g->stream);
    if (exp && !r) r = DRV->cuStreamSynchronize(e->g->stream);
    if (exp) DRV->cuMemFree(exp);
    if (r) return wk_cuda_fail(e, r, "comparing outputs");
    e->mismatches += st[i].mismatches;
  }
  const char *pre = bench ? "after the timing loop, " : "";
  char where[300];
  snprintf(where, sizeof where, "shape %s, trial %d", s->label, trial + 1);
  for (int i = 0; i < e->ntensors; i++)
    if (e->tensors[i].output && st[i].unwritten) {
      if (set_worst(e, s, i, ref[i], st[i].first_unwritten)) return -1;
      return wk_fail(e, bench ? "wrong" : "unwritten", stage,
                     "%s%llu of %llu elements of %s were never written (first at flat index "
                     "%llu; %s)",
                     pre, (unsigned long long)st[i].unwritten, (unsigned long long)s->t[i].numel,
                     e->tensors[i].name, (unsigned long long)st[i].first_unwritten, where);
    }
  for (int i = 0; snapshot && i < e->ntensors; i++)
    if (e->tensors[i].output && st[i].nondet) {
      if (set_worst(e, s, i, ref[i], st[i].first_nondet)) return -1;
      return wk_fail(e, "nondeterministic", stage,
                     "two runs on the same inputs differ in %llu of %llu elements of %s (first "
                     "at flat index %llu; %s)",
                     (unsigned long long)st[i].nondet, (unsigned long long)s->t[i].numel,
                     e->tensors[i].name, (unsigned long long)st[i].first_nondet, where);
    }
  int worst_i = -1;
  for (int i = 0; i < e->ntensors; i++)
    if (e->tensors[i].output && st[i].worst_index != UINT64_MAX &&
        (worst_i < 0 || st[i].worst_key > st[worst_i].worst_key))
      worst_i = i;
  if (worst_i >= 0 && (st[worst_i].worst_key > e->worst_key || !e->worst.have)) {
    e->worst_key = st[worst_i].worst_key;
    if (set_worst(e, s, worst_i, ref[worst_i], st[worst_i].worst_index)) return -1;
  }
  for (int i = 0; i < e->ntensors; i++)
    if (e->tensors[i].output && st[i].mismatches) {
      if (i != worst_i && set_worst(e, s, i, ref[i], st[i].worst_index)) return -1;
      wk_worst *w = &e->worst;
      return wk_fail(e, "wrong", stage,
                     "%s%llu of %llu elements of %s differ from the reference (%llu NaN); worst "
                     "at flat index %llu: expected %.9g, got %.9g (%s)",
                     pre, (unsigned long long)st[i].mismatches, (unsigned long long)s->t[i].numel,
                     e->tensors[i].name, (unsigned long long)st[i].nans,
                     (unsigned long long)w->flat, w->expected, w->actual, where);
    }
  return 0;
}

static int snapshot_outputs(wk_eval *e, wk_shape *s) {
  for (int i = 0; i < e->ntensors; i++) {
    if (!e->tensors[i].output) continue;
    CUresult r = DRV->cuMemcpyDtoDAsync(s->snap[i].ptr, s->t[i].ptr, s->t[i].bytes, e->g->stream);
    if (r) return wk_cuda_fail(e, r, "copying the first run's outputs");
  }
  return 0;
}

int wk_verify_shape(wk_eval *e, wk_shape *s) {
  for (int trial = 0; trial < e->trials; trial++) {
    uint64_t before[WK_MAX_TENSORS] = {0};
    if (wk_gen_inputs(e, s, trial)) return -1;
    void **ref = reference_outputs(e, s, trial);
    if (!ref) return -1;
    if (checksum_inputs(e, s, before)) return -1;
    if (run_candidate(e, s, wk_poison_a, "running the candidate", "verify")) return -1;
    if (inputs_unchanged(e, s, before, trial, "first") || snapshot_outputs(e, s)) return -1;
    if (run_candidate(e, s, wk_poison_b, "running the candidate again", "verify")) return -1;
    if (inputs_unchanged(e, s, before, trial, "second")) return -1;
    if (compare_outputs(e, s, ref, wk_poison_a, wk_poison_b, 1, "verify", trial)) return -1;
    e->trials_done++;
  }
  return 0;
}

int wk_recheck(wk_eval *e, wk_shape *s, const char *stage) {
  int trial = e->trials - 1;
  void **ref = reference_outputs(e, s, trial); /* cached by the trial loop */
  if (!ref) return -1;
  if (run_candidate(e, s, wk_poison_a, "running the candidate after the timing loop", stage))
    return -1;
  return compare_outputs(e, s, ref, wk_poison_a, wk_poison_a, 0, stage, trial);
}
