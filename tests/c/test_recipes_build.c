/* Every shipped recipe (every recipes/NAME.yaml of the source tree) builds and launches on paper,
 * without a GPU, through the same code the evaluator uses:
 *   - it loads (what `kevo check` does);
 *   - its reference, and each seed at a sample of its knob space that covers every value of
 *     every knob (KEVO_TEST_ALL_POINTS=1: the whole space), compiles for sm_90: CUDA with NVRTC
 *     (kevo.cuda's core) with no warning (a register spill is noted), Triton through the compile
 *     server (skipped, loudly, when no Triton is found);
 *   - its launch chunk resolves on every shape of the recipe (launch_resolve), names kernels the
 *     module has, and asks for a launch the H200 accepts: at most 1024 threads, grid y and z at
 *     most 65535, dynamic plus static shared memory within 227 KiB, registers times threads
 *     within the 64 Ki register file; a Triton launch also gets its signature from the resolved
 *     plan (triton_plan_signature) and is finished for the compiled module (triton_plan_finish).
 * Whether the kernels compute the right thing is for kevo eval on a GPU. */
#include "check.h"
#include "cuda_compile.h"
#include "eval_triton.h"
#include "launch.h"
#include "recipe.h"
#include "triton.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdint.h>

#define MAX_JOBS 1024
#define MAX_KNOBS 16
#define CUDA_SAMPLE 12  /* knob points per CUDA seed, unless KEVO_TEST_ALL_POINTS */
#define TRITON_SAMPLE 5 /* per Triton seed */
#define SMEM_LIMIT (227 * 1024)

static const launch_device H200 = {"NVIDIA H200", 132, 9, 0};

/* One compile: a source of a recipe at one knob point. */
typedef struct job {
  const kevo_recipe *r;
  const kevo_source *src;
  const char *what; /* "reference", "seed 1", ... */
  char *text;       /* the source file */
  size_t len;
  char *chunk; /* its launch chunk */
  const char *chunk_where;
  int chunk_line;
  size_t nknobs;
  kevo_define knobs[MAX_KNOBS];
  char label[256]; /* "BLOCK=256 VEC=4" */
  cJSON *sig;      /* Triton: the signature, from the plan at the benchmark shape */
  cJSON *constexprs;
  int num_warps, num_stages;
} job;

static job jobs[MAX_JOBS];
static size_t njobs;

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  fclose(f);
  if (s) s[n] = '\0';
  *len = (size_t)n;
  return s;
}

static const char *source_path(const kevo_recipe *r, const kevo_source *s, char *buf, size_t cap) {
  if (s->file[0] == '/') return s->file;
  FILE *f = fopen(s->file, "rb");
  if (f) {
    fclose(f);
    return s->file;
  }
  snprintf(buf, cap, "%s/%s", r->dir, s->file);
  return buf;
}

/* Point i of a mixed-radix enumeration of the knob space into idx. */
static void point_of(const kevo_source *s, size_t i, size_t *idx) {
  for (size_t k = s->nknobs; k-- > 0;) {
    idx[k] = i % s->knobs[k].nvalues;
    i /= s->knobs[k].nvalues;
  }
}

static size_t index_of(const kevo_source *s, const size_t *idx) {
  size_t i = 0;
  for (size_t k = 0; k < s->nknobs; k++)
    i = i * s->knobs[k].nvalues + idx[k];
  return i;
}

/* The knob points to test, as indices into the whole space: all of it when it is small or
 * asked for, else the diagonals (every value of every knob, with the others turning in step
 * and against it), the last point (the largest values: most resources), then evenly spread
 * points up to cap. */
static size_t sample_points(const kevo_source *s, size_t cap, size_t *out, size_t out_cap) {
  size_t total = 1, widest = 1;
  for (size_t k = 0; k < s->nknobs; k++) {
    total *= s->knobs[k].nvalues;
    if (s->knobs[k].nvalues > widest) widest = s->knobs[k].nvalues;
  }
  const char *all = getenv("KEVO_TEST_ALL_POINTS");
  if ((all && !strcmp(all, "1")) || total <= cap) cap = total;
  size_t n = 0;
  unsigned char seen[4096] = {0};
#define ADD(i)                                                                                     \
  do {                                                                                             \
    size_t i_ = (i);                                                                               \
    if (i_ < sizeof seen && !seen[i_] && n < out_cap) {                                            \
      seen[i_] = 1;                                                                                \
      out[n++] = i_;                                                                               \
    }                                                                                              \
  } while (0)
  if (cap < total) {
    size_t idx[MAX_KNOBS];
    for (size_t d = 0; d < widest; d++) {
      for (size_t k = 0; k < s->nknobs; k++)
        idx[k] = d % s->knobs[k].nvalues;
      ADD(index_of(s, idx));
      for (size_t k = 0; k < s->nknobs; k++)
        idx[k] =
            k % 2 ? s->knobs[k].nvalues - 1 - d % s->knobs[k].nvalues : d % s->knobs[k].nvalues;
      ADD(index_of(s, idx));
    }
    ADD(total - 1);
  }
  for (size_t j = 0; n < cap && j < cap; j++)
    ADD(j * total / cap);
  for (size_t j = 0; n < cap && j < total; j++)
    ADD(j);
#undef ADD
  return n;
}

static void add_job(const kevo_recipe *r, const kevo_source *s, const char *what,
                    const size_t *idx) {
  if (njobs == MAX_JOBS) {
    CHECK(!"too many compile jobs");
    return;
  }
  job *j = &jobs[njobs];
  memset(j, 0, sizeof *j);
  j->r = r;
  j->src = s;
  j->what = what;
  char buf[4096];
  j->text = slurp(source_path(r, s, buf, sizeof buf), &j->len);
  CHECK(j->text != NULL);
  if (!j->text) return;
  kevo_error err = {0};
  if (kevo_source_launch(r, s, &j->chunk, &j->chunk_where, &j->chunk_line, &err)) {
    fprintf(stderr, "%s %s: %s\n", r->name, what, err.msg);
    CHECK(!"a launch chunk");
    free(j->text);
    return;
  }
  j->num_warps = 4;
  j->num_stages = 3;
  j->constexprs = cJSON_CreateObject();
  for (size_t k = 0; k < s->nknobs && k < MAX_KNOBS; k++) {
    const char *name = s->knobs[k].name, *v = s->knobs[k].values[idx[k]];
    j->knobs[j->nknobs++] = (kevo_define){name, v};
    snprintf(j->label + strlen(j->label), sizeof j->label - strlen(j->label), "%s%s=%s",
             k ? " " : "", name, v);
    char *end;
    double d = strtod(v, &end);
    if (!strcmp(name, "num_warps"))
      j->num_warps = (int)d;
    else if (!strcmp(name, "num_stages"))
      j->num_stages = (int)d;
    else if (*end == '\0' && end != v)
      cJSON_AddNumberToObject(j->constexprs, name, d);
    else
      cJSON_AddStringToObject(j->constexprs, name, v);
  }
  njobs++;
}

static const char *dtype_of(const char *name, void *ud) {
  const kevo_recipe *r = ud;
  for (size_t i = 0; i < r->ntensors; i++)
    if (!strcmp(r->tensors[i].name, name)) return kevo_dtype_name(r->tensors[i].dtype);
  return "u8"; /* a scratch buffer (the launch checked the name): untyped bytes, a Triton kernel
                  casts the pointer (ptr.to(tl.pointer_type(tl.float32))) */
}

static void fail_job(const job *j, const char *shape, const char *msg) {
  check_failures++;
  fprintf(stderr, "FAIL %s %s %s [%s]%s%s: %s\n", j->r->name, j->what, j->src->file, j->label,
          shape ? " at " : "", shape ? shape : "", msg);
}

/* The plan of job j at shape s, or NULL after reporting why. */
static cJSON *resolve_at(const job *j, const kevo_shape *sh) {
  const kevo_recipe *r = j->r;
  const char *names[64];
  launch_param params[64];
  size_t nb = r->ntensors < 64 ? r->ntensors : 64, np = sh->nparams < 64 ? sh->nparams : 64;
  for (size_t i = 0; i < nb; i++)
    names[i] = r->tensors[i].name;
  for (size_t i = 0; i < np; i++)
    params[i] = (launch_param){sh->params[i].name, sh->params[i].value};
  launch_env env = {.params = params,
                    .nparams = np,
                    .knobs = j->knobs,
                    .nknobs = j->nknobs,
                    .buffers = names,
                    .nbuffers = nb,
                    .device = &H200};
  cJSON *plan = NULL;
  kevo_error err = {0};
  check_count++;
  if (launch_resolve(j->chunk, strlen(j->chunk), j->chunk_where, j->chunk_line, &env, &plan,
                     &err)) {
    fail_job(j, sh->label, err.msg);
    return NULL;
  }
  return plan;
}

static double num(const cJSON *o, const char *key, double def) {
  const cJSON *v = cJSON_GetObjectItem(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : def;
}

/* The launch limits of one kernel launch; regs and static shared from the compiled module
 * (regs -1 when unknown). */
static void check_limits(const job *j, const char *shape, const cJSON *k, int regs,
                         int static_shared) {
  const cJSON *grid = cJSON_GetObjectItem(k, "grid"), *block = cJSON_GetObjectItem(k, "block");
  double g[3], b[3];
  for (int d = 0; d < 3; d++) {
    g[d] =
        cJSON_IsNumber(cJSON_GetArrayItem(grid, d)) ? cJSON_GetArrayItem(grid, d)->valuedouble : 1;
    b[d] = cJSON_IsNumber(cJSON_GetArrayItem(block, d)) ? cJSON_GetArrayItem(block, d)->valuedouble
                                                        : 1;
  }
  double threads = b[0] * b[1] * b[2], shared = num(k, "shared", 0) + static_shared;
  char msg[256];
  check_count++;
  if (g[0] < 1 || g[0] > 2147483647.0 || g[1] < 1 || g[1] > 65535 || g[2] < 1 || g[2] > 65535) {
    snprintf(msg, sizeof msg, "grid %.0f x %.0f x %.0f is out of range", g[0], g[1], g[2]);
    fail_job(j, shape, msg);
  } else if (threads < 1 || threads > 1024 || b[2] > 64) {
    snprintf(msg, sizeof msg, "block %.0f x %.0f x %.0f is illegal", b[0], b[1], b[2]);
    fail_job(j, shape, msg);
  } else if (shared > SMEM_LIMIT) {
    snprintf(msg, sizeof msg, "%.0f bytes of shared memory (at most %d)", shared, SMEM_LIMIT);
    fail_job(j, shape, msg);
  } else if (regs > 0 && regs * threads > 65536) {
    snprintf(msg, sizeof msg, "%d registers x %.0f threads exceed the register file", regs,
             threads);
    fail_job(j, shape, msg);
  }
}

static void run_cuda(size_t *idx, size_t n) {
  cuda_compile_opts *opts = calloc(n, sizeof *opts);
  cuda_module **mods = calloc(n, sizeof *mods);
  int *rcs = calloc(n, sizeof *rcs);
  kevo_error *errs = calloc(n, sizeof *errs);
  for (size_t i = 0; i < n; i++) {
    const job *j = &jobs[idx[i]];
    const char *base = strrchr(j->src->file, '/');
    opts[i] = (cuda_compile_opts){.source = j->text,
                                  .len = j->len,
                                  .name = base ? base + 1 : j->src->file,
                                  .arch = "sm_90",
                                  .defines = j->knobs,
                                  .ndefines = j->nknobs,
                                  .no_cache = 1};
  }
  cuda_compile_many(opts, n, mods, rcs, errs);
  for (size_t i = 0; i < n; i++) {
    const job *j = &jobs[idx[i]];
    const cuda_module *m = mods[i];
    check_count++;
    if (rcs[i] || !m || !m->ok) {
      fail_job(j, NULL, errs[i].msg);
      if (m && m->log) fprintf(stderr, "%s\n", m->log);
      cuda_module_free(mods[i]);
      continue;
    }
    for (size_t d = 0; d < m->ndiags; d++)
      if (strcmp(m->diags[d].severity, "note")) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s at line %d: %s", m->diags[d].severity, m->diags[d].line,
                 m->diags[d].message);
        fail_job(j, NULL, msg);
      }
    for (size_t k = 0; k < m->nkernels; k++) /* slow, not wrong: said, not failed */
      if (m->kernels[k].spill_stores || m->kernels[k].spill_loads)
        fprintf(stderr, "NOTE %s %s [%s]: kernel %s spills (%d bytes stored, %d loaded)\n",
                j->r->name, j->what, j->label, m->kernels[k].name, m->kernels[k].spill_stores,
                m->kernels[k].spill_loads);
    for (size_t s = 0; s < j->r->nshapes; s++) {
      const kevo_shape *sh = &j->r->shapes[s];
      cJSON *plan = resolve_at(j, sh);
      const cJSON *k;
      cJSON_ArrayForEach(k, cJSON_GetObjectItem(plan, "kernels")) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(k, "name"));
        const cuda_kernel_info *ki = NULL;
        for (size_t q = 0; q < m->nkernels && name; q++)
          if (!strcmp(m->kernels[q].name, name)) ki = &m->kernels[q];
        check_count++;
        if (!ki) {
          fail_job(j, sh->label, "the launch names a kernel the module does not have");
          continue;
        }
        check_limits(j, sh->label, k, ki->registers, ki->shared_static);
      }
      cJSON_Delete(plan);
    }
    cuda_module_free(mods[i]);
  }
  free(opts);
  free(mods);
  free(rcs);
  free(errs);
}

static void run_triton(size_t *idx, size_t n) {
  triton_pool *pool = NULL;
  kevo_error err = {0};
  char version[64];
  triton_pool_opts po = {.no_disk_cache = 1, .arch = "sm_90"};
  if (triton_pool_new(&po, &pool, &err) || triton_pool_ready(pool, version, sizeof version, &err)) {
    fprintf(stderr,
            "SKIPPED (Triton part): %s\n  (run scripts/setup.sh, or set KEVO_PYTHON to a python3 "
            "with triton): %zu Triton compiles not checked\n",
            err.msg, n);
    triton_pool_free(pool);
    return;
  }
  /* one compile per kernel of each job's plan, typed and given its constexprs as the evaluator
   * does (evtri_prepare: a seed may launch several Triton kernels) */
  const size_t cap = n * EVTRI_MAX_JOBS;
  triton_compile_opts *opts = calloc(cap, sizeof *opts);
  triton_module **mods = calloc(cap, sizeof *mods);
  int *rcs = calloc(cap, sizeof *rcs);
  kevo_error *errs = calloc(cap, sizeof *errs);
  evtri_prep *preps = calloc(n, sizeof *preps);
  size_t m = 0;
  size_t *which = calloc(cap, sizeof *which), *kern = calloc(cap, sizeof *kern);
  for (size_t i = 0; i < n; i++) {
    job *j = &jobs[idx[i]];
    cJSON *plan = resolve_at(j, &j->r->shapes[0]);
    if (!plan) continue;
    kevo_error e = {0};
    check_count++;
    if (evtri_prepare(plan, j->text, j->len, j->knobs, j->nknobs, dtype_of, (void *)j->r, &preps[i],
                      &e)) {
      fail_job(j, NULL, e.msg);
    } else {
      const char *base = strrchr(j->src->file, '/');
      for (size_t q = 0; q < preps[i].njobs; q++) {
        evtri_compile_opts(&preps[i], q, j->text, j->len, base ? base + 1 : j->src->file, "sm_90",
                           &opts[m]);
        which[m] = i;
        kern[m++] = q;
      }
    }
    cJSON_Delete(plan);
  }
  triton_compile_many(pool, opts, m, mods, rcs, errs);
  for (size_t i = 0; i < m; i++) {
    const job *j = &jobs[idx[which[i]]];
    const char *kname = preps[which[i]].jobs[kern[i]].kernel;
    check_count++;
    if (rcs[i] || !mods[i] || !mods[i]->ok) {
      fail_job(j, NULL, errs[i].msg);
      triton_module_free(mods[i]);
      continue;
    }
    for (size_t s = 0; s < j->r->nshapes; s++) {
      const kevo_shape *sh = &j->r->shapes[s];
      cJSON *plan = resolve_at(j, sh);
      cJSON *ks = cJSON_GetObjectItem(plan, "kernels"), *k;
      cJSON_ArrayForEach(k, ks) {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(k, "name")), kname)) continue;
        kevo_error e = {0};
        check_count++;
        if (triton_plan_finish(plan, k, 0, mods[i], &e))
          fail_job(j, sh->label, e.msg);
        else
          check_limits(j, sh->label, k, -1, 0);
      }
      cJSON_Delete(plan);
    }
    triton_module_free(mods[i]);
  }
  for (size_t i = 0; i < n; i++)
    evtri_prep_free(&preps[i]);
  free(preps);
  free(kern);
  free(which);
  free(opts);
  free(mods);
  free(rcs);
  free(errs);
  triton_pool_free(pool);
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void) {
  const char *src = getenv("KEVO_SRC");
  if (!src) {
    fprintf(stderr, "KEVO_SRC is not set (run under ctest)\n");
    return 1;
  }
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/recipes", src);
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  if (!d) CHECK_DONE();
  char *names[256];
  size_t nnames = 0;
  /* KEVO_TEST_RECIPES=a,b: only those recipes (while writing one; ctest checks them all) */
  const char *only = getenv("KEVO_TEST_RECIPES");
  for (struct dirent *e; (e = readdir(d)) && nnames < 256;) {
    size_t l = strlen(e->d_name);
    if (l <= 5 || strcmp(e->d_name + l - 5, ".yaml")) continue;
    if (only) {
      int hit = 0;
      for (const char *p = only; *p;) {
        size_t n = strcspn(p, ",");
        if (n == l - 5 && !strncmp(p, e->d_name, n)) hit = 1;
        p += n + (p[n] == ',');
      }
      if (!hit) continue;
    }
    names[nnames++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, nnames, sizeof *names, by_name);
  CHECK(only || nnames >= 10);

  kevo_recipe *recipes[256];
  size_t nrecipes = 0;
  static const char *const seed_names[] = {"seed 0", "seed 1", "seed 2", "seed 3", "seed 4"};
  size_t cuda_idx[MAX_JOBS], triton_idx[MAX_JOBS], ncuda = 0, ntriton = 0;
  for (size_t i = 0; i < nnames; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    kevo_error err = {0};
    kevo_recipe *r = NULL;
    check_count++;
    if (kevo_recipe_load(path, &r, &err)) {
      check_failures++;
      fprintf(stderr, "FAIL %s\n", err.msg);
      continue;
    }
    recipes[nrecipes++] = r;
    CHECK(r->nshapes >= 4); /* the benchmark shape and at least three more */
    CHECK(r->cost_bytes != NULL && r->prompt != NULL && r->nseeds >= 2);
    int langs = 0;
    size_t zero = 0;
    add_job(r, &r->reference, "reference", &zero);
    for (size_t s = 0; s < r->nseeds && s < 5; s++) {
      const kevo_source *seed = &r->seeds[s];
      int cuda = !strcmp(seed->lang, "cuda");
      langs |= cuda ? 1 : 2;
      size_t pts[256];
      size_t np = sample_points(seed, cuda ? CUDA_SAMPLE : TRITON_SAMPLE, pts, 256);
      CHECK(seed->nknobs > 0 && np > 0);
      for (size_t p = 0; p < np; p++) {
        size_t idx[MAX_KNOBS];
        point_of(seed, pts[p], idx);
        add_job(r, seed, seed_names[s], idx);
      }
    }
    CHECK(langs == 3); /* a CUDA seed and a Triton seed */
  }
  for (size_t i = 0; i < njobs; i++) {
    if (!strcmp(jobs[i].src->lang, "cuda"))
      cuda_idx[ncuda++] = i;
    else
      triton_idx[ntriton++] = i;
  }
  printf("%zu recipes: %zu CUDA and %zu Triton compiles\n", nrecipes, ncuda, ntriton);
  run_cuda(cuda_idx, ncuda);
  run_triton(triton_idx, ntriton);

  for (size_t i = 0; i < njobs; i++) {
    free(jobs[i].text);
    free(jobs[i].chunk);
    cJSON_Delete(jobs[i].sig);
    cJSON_Delete(jobs[i].constexprs);
  }
  for (size_t i = 0; i < nrecipes; i++)
    kevo_recipe_free(recipes[i]);
  for (size_t i = 0; i < nnames; i++)
    free(names[i]);
  cuda_compile_drain(10);
  CHECK_DONE();
}
