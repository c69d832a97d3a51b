/* cuda_compile.c: CUDA C to cubin with NVRTC, in process, with a deadline, a content-hash cache and
 * a capped thread pool. See cuda_compile.h for the options, the include policy and the timeout. */
#include "cuda_compile.h"

#include "cuda_cache.h"
#include "cuda_scan.h"
#include "resources.h"
#include "sha256.h"

#include <nvrtc.h>

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum {
  MAX_DEFINES = 64,
  MAX_DEFINE_VALUE = 1024,
  MAX_NAME = 128,
  MAX_ARGS = 8 + MAX_DEFINES,
  MAX_ABANDONED = 4,
  MAX_POOL = 8,
  MAX_SHIMS = 64,
  LOG_CAP = 64 << 10,
  COMPILE_STACK = 64 << 20, /* deep template recursion in the front end */
};
#define DEFAULT_TIMEOUT_S 60.0
#define PTXAS_VERBOSE "-Xptxas=-v"
#define SHIM_DIR "runtime/cudashim/" /* embedded headers NVRTC is given in memory */
#define PRELUDE "kevo_prelude.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* ---- what is known once: NVRTC's version and archs, the toolkit's headers ------------------ */

static struct {
  int major, minor;
  int archs[128];
  int narchs;
  char inc[2][4096]; /* the toolkit's include directory, and its cccl/ when there is one */
  int ninc;
  char default_arch[16];
  /* the headers kevo gives NVRTC in memory (cuda_compile.h): names as included, and texts */
  const char *shim_names[MAX_SHIMS + 1];
  const char *shim_texts[MAX_SHIMS];
  int nshims, has_prelude;
  char shim_digest[KEVO_HASH_HEX];
} env;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t ab_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ab_cv;
static int abandoned; /* timed-out compiles still running */

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int toolkit_headers_in(const char *dir) {
  char p[4200];
  struct stat st;
  snprintf(p, sizeof p, "%s/cuda_fp16.h", dir);
  return stat(p, &st) == 0;
}

/* The toolkit's include directory: $KEVO_CUDA_INCLUDE, next to the libnvrtc we run with,
 * $CUDA_HOME, $CUDA_PATH, then the usual install place. */
static void find_toolkit(void) {
  char cand[5][4096];
  int n = 0;
  const char *e;
  if ((e = getenv("KEVO_CUDA_INCLUDE")) && *e) snprintf(cand[n++], sizeof cand[0], "%s", e);
  Dl_info info;
  if (dladdr((void *)nvrtcVersion, &info) && info.dli_fname) {
    char lib[4096], real[4096];
    snprintf(lib, sizeof lib, "%s", info.dli_fname);
    if (realpath(lib, real)) snprintf(lib, sizeof lib, "%s", real);
    snprintf(cand[n++], sizeof cand[0], "%s/../include", dirname(lib));
  }
  if ((e = getenv("CUDA_HOME")) && *e) snprintf(cand[n++], sizeof cand[0], "%s/include", e);
  if ((e = getenv("CUDA_PATH")) && *e) snprintf(cand[n++], sizeof cand[0], "%s/include", e);
  snprintf(cand[n++], sizeof cand[0], "/usr/local/cuda/include");
  for (int i = 0; i < n; i++) {
    if (!toolkit_headers_in(cand[i])) continue;
    char real[4096];
    snprintf(env.inc[0], sizeof env.inc[0], "%s", realpath(cand[i], real) ? real : cand[i]);
    env.ninc = 1;
    snprintf(env.inc[1], sizeof env.inc[1], "%s/cccl", env.inc[0]);
    if (is_dir(env.inc[1])) env.ninc = 2;
    return;
  }
}

/* The embedded shim headers, and one digest of them all for the content hash. */
static void find_shims(void) {
  kevo_sha256 s;
  kevo_sha256_init(&s);
  size_t plen = strlen(SHIM_DIR);
  for (const struct kevo_resource *r = kevo_resources; r->name && env.nshims < MAX_SHIMS; r++) {
    if (strncmp(r->name, SHIM_DIR, plen)) continue;
    env.shim_names[env.nshims] = r->name + plen;
    env.shim_texts[env.nshims++] = r->data;
    env.has_prelude |= !strcmp(r->name + plen, PRELUDE);
    kevo_sha256_update(&s, r->name, strlen(r->name) + 1);
    kevo_sha256_update(&s, r->data, r->size + 1);
  }
  env.shim_names[env.nshims] = NULL;
  kevo_sha256_final_hex(&s, env.shim_digest);
}

static void env_init(void) {
  nvrtcVersion(&env.major, &env.minor);
  find_shims();
  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0 &&
      n <= (int)(sizeof env.archs / sizeof env.archs[0]) &&
      nvrtcGetSupportedArchs(env.archs) == NVRTC_SUCCESS)
    env.narchs = n;
  find_toolkit();
  const char *a = getenv("KEVO_ARCH");
  snprintf(env.default_arch, sizeof env.default_arch, "%s", a && *a ? a : "sm_90");
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&ab_cv, &ca);
  pthread_condattr_destroy(&ca);
}

void cuda_nvrtc_version(int *major, int *minor) {
  pthread_once(&env_once, env_init);
  *major = env.major;
  *minor = env.minor;
}

const char *cuda_default_arch(void) {
  pthread_once(&env_once, env_init);
  return env.default_arch;
}

int cuda_check_arch(const char *arch, kevo_error *err) {
  pthread_once(&env_once, env_init);
  const char *p = arch ? arch : "";
  int digits = 0, num = 0;
  if (strncmp(p, "sm_", 3) == 0)
    for (p += 3; isdigit((unsigned char)*p) && digits < 4; p++, digits++)
      num = num * 10 + (*p - '0');
  if (*p == 'a' || *p == 'f') p++;
  if (digits < 2 || digits > 3 || *p)
    return kevo_fail(err, KEVO_E_ARG, "arch '%s': expected sm_NN or sm_NNa (like sm_90)",
                     arch ? arch : "");
  if (env.narchs == 0) return KEVO_OK; /* NVRTC did not list them: it will say at compile */
  for (int i = 0; i < env.narchs; i++)
    if (env.archs[i] == num) return KEVO_OK;
  return kevo_fail(err, KEVO_E_ARG, "arch '%s': not supported by NVRTC %d.%d (sm_%d to sm_%d)",
                   arch, env.major, env.minor, env.narchs ? env.archs[0] : 0,
                   env.narchs ? env.archs[env.narchs - 1] : 0);
}

static int is_identifier(const char *s) {
  if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return 0;
  for (; *s; s++)
    if (!(isalnum((unsigned char)*s) || *s == '_')) return 0;
  return 1;
}

static int cmp_define(const void *a, const void *b) {
  return strcmp(((const kevo_define *)a)->name, ((const kevo_define *)b)->name);
}

/* ---- a checked request: NVRTC's arguments and the content hash ---------------------------- */

typedef struct prepared {
  const cuda_compile_opts *o;
  const char *src;
  size_t len;
  const char *name;
  char arch[16];
  char *argv[MAX_ARGS];
  int argc;
  char hash[KEVO_HASH_HEX];
  double timeout_s;
} prepared;

static void prepared_free(prepared *p) {
  for (int i = 0; i < p->argc; i++)
    free(p->argv[i]);
  p->argc = 0;
}

static int add_arg(prepared *p, const char *fmt, const char *a, const char *b) {
  char tmp[8192];
  snprintf(tmp, sizeof tmp, fmt, a, b);
  if (p->argc >= MAX_ARGS || !(p->argv[p->argc] = strdup(tmp))) return KEVO_E_NOMEM;
  p->argc++;
  return KEVO_OK;
}

static void hash_field(kevo_sha256 *s, const void *data, size_t len) {
  char n[32];
  int w = snprintf(n, sizeof n, "%zu:", len);
  kevo_sha256_update(s, n, (size_t)w);
  kevo_sha256_update(s, data, len);
}

static int prepare(const cuda_compile_opts *o, prepared *p, kevo_error *err) {
  pthread_once(&env_once, env_init);
  memset(p, 0, sizeof *p);
  p->o = o;
  if (!o || !o->source) return kevo_fail(err, KEVO_E_ARG, "cuda_compile: no source");
  p->src = o->source;
  p->len = o->len ? o->len : strlen(o->source);
  if (p->len > CUDA_MAX_SOURCE)
    return kevo_fail(err, KEVO_E_ARG, "source is %zu bytes, over the %zu byte limit", p->len,
                     CUDA_MAX_SOURCE);
  p->name = o->name ? o->name : "candidate.cu";
  size_t nl = strlen(p->name);
  if (nl == 0 || nl > MAX_NAME ||
      strspn(p->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS"
                      "TUVWXYZ0123456789_.-") != nl)
    return kevo_fail(err, KEVO_E_ARG, "name '%.*s': use 1 to %d letters, digits, '_', '.', '-'",
                     MAX_NAME, p->name, MAX_NAME);
  const char *arch = o->arch ? o->arch : env.default_arch;
  if (cuda_check_arch(arch, err))
    return o->arch ? err->status : kevo_fail_prefix(err, "KEVO_ARCH: ");
  snprintf(p->arch, sizeof p->arch, "%s", arch);
  if (o->ndefines > MAX_DEFINES)
    return kevo_fail(err, KEVO_E_ARG, "%zu defines, more than %d", o->ndefines, MAX_DEFINES);
  kevo_define defs[MAX_DEFINES];
  for (size_t i = 0; i < o->ndefines; i++) {
    defs[i] = o->defines[i];
    if (!is_identifier(defs[i].name) || strlen(defs[i].name) > MAX_NAME)
      return kevo_fail(err, KEVO_E_ARG, "define name '%s' is not an identifier",
                       defs[i].name ? defs[i].name : "(null)");
    const char *v = defs[i].value;
    if (v && (strpbrk(v, "\r\n") || strlen(v) > MAX_DEFINE_VALUE))
      return kevo_fail(err, KEVO_E_ARG, "define %s: the value has a newline or is over %d bytes",
                       defs[i].name, MAX_DEFINE_VALUE);
  }
  qsort(defs, o->ndefines, sizeof defs[0], cmp_define);
  for (size_t i = 1; i < o->ndefines; i++)
    if (strcmp(defs[i].name, defs[i - 1].name) == 0)
      return kevo_fail(err, KEVO_E_ARG, "define %s is given twice", defs[i].name);
  double t = o->timeout_s;
  if (!isfinite(t) || t < 0)
    return kevo_fail(err, KEVO_E_ARG, "timeout_s must be a number >= 0 (0: the default)");
  if (t == 0) {
    const char *e = getenv("KEVO_COMPILE_TIMEOUT");
    t = e && atof(e) > 0 ? atof(e) : DEFAULT_TIMEOUT_S;
  }
  p->timeout_s = t;

  /* the include paths come last in the hash's eyes: they name this machine, not the input */
  int rc = add_arg(p, "-arch=%s%s", p->arch, "");
  if (!rc) rc = add_arg(p, "%s%s", "-std=c++17", "");
  if (!rc) rc = add_arg(p, "%s%s", "-default-device", "");
  if (!rc) rc = add_arg(p, "%s%s", PTXAS_VERBOSE, "");
  if (!rc && o->lineinfo) rc = add_arg(p, "%s%s", "-lineinfo", "");
  if (!rc && env.has_prelude) rc = add_arg(p, "--pre-include=%s%s", PRELUDE, "");
  for (size_t i = 0; !rc && i < o->ndefines; i++)
    rc = add_arg(p, defs[i].value ? "-D%s=%s" : "-D%s%s", defs[i].name,
                 defs[i].value ? defs[i].value : "");
  int nhashed = p->argc;
  for (int i = 0; !rc && i < env.ninc; i++)
    rc = add_arg(p, "-I%s%s", env.inc[i], "");
  if (rc) return kevo_fail(err, rc, "out of memory building NVRTC's options");

  kevo_sha256 s;
  kevo_sha256_init(&s);
  char ver[128];
  snprintf(ver, sizeof ver, "kevo-cuda-2 nvrtc %d.%d shims %s", env.major, env.minor,
           env.shim_digest);
  hash_field(&s, ver, strlen(ver));
  for (int i = 0; i < nhashed; i++)
    hash_field(&s, p->argv[i], strlen(p->argv[i]));
  hash_field(&s, p->name, strlen(p->name));
  hash_field(&s, p->src, p->len);
  kevo_sha256_final_hex(&s, p->hash);
  return KEVO_OK;
}

/* ---- one NVRTC run on a thread of its own, which the caller may stop waiting for ---------- */

typedef struct job {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done, refs, abandoned;
  atomic_int cancel;
  double deadline_ms;
  char *src, *name;
  char *argv[MAX_ARGS];
  int argc;
  nvrtcResult rc;
  char *log;
  unsigned char *cubin;
  size_t cubin_size;
  unsigned artifacts;
} job;

static void job_free(job *j) {
  free(j->src);
  free(j->name);
  for (int i = 0; i < j->argc; i++)
    free(j->argv[i]);
  free(j->log);
  free(j->cubin);
  pthread_mutex_destroy(&j->mu);
  pthread_cond_destroy(&j->cv);
  free(j);
}

/* NVRTC asks this at its checkpoints; 1 cancels. Once past the deadline it stays 1. */
static int job_flow(void *payload, void *reserved) {
  job *j = payload;
  return atomic_load(&j->cancel) || now_ms() > j->deadline_ms;
}

/* Appends NVRTC's log of prog to j->log. */
static void take_log(job *j, nvrtcProgram prog) {
  size_t n = 0, have = j->log ? strlen(j->log) : 0;
  if (nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n <= 1) return;
  char *grown = realloc(j->log, have + n + 1);
  if (!grown) return;
  j->log = grown;
  if (nvrtcGetProgramLog(prog, j->log + have) != NVRTC_SUCCESS) j->log[have] = '\0';
  j->log[have + n] = '\0';
}

/* Does any line of the log, other than ptxas -v's info lines, report an error? */
static int log_reports_error(const char *log) {
  for (const char *p = log ? log : ""; *p;) {
    size_t len = strcspn(p, "\n");
    if (strncmp(p, "ptxas info", 10) && strncmp(p, "ptxas         .", 16)) {
      const char *e = strstr(p, "error");
      if (e && e < p + len) return 1;
    }
    p += len + (p[len] == '\n');
  }
  return 0;
}

static nvrtcResult run_nvrtc(job *j, int argc, char **argv) {
  nvrtcProgram prog;
  nvrtcResult rc =
      nvrtcCreateProgram(&prog, j->src, j->name, env.nshims, env.shim_texts, env.shim_names);
  if (rc != NVRTC_SUCCESS) return rc;
  nvrtcSetFlowCallback(prog, job_flow, j);
  rc = nvrtcCompileProgram(prog, argc, (const char *const *)argv);
  take_log(j, prog);
  if (rc == NVRTC_SUCCESS) {
    size_t n = 0;
    rc = nvrtcGetCUBINSize(prog, &n);
    if (rc == NVRTC_SUCCESS && !(j->cubin = malloc(n ? n : 1))) rc = NVRTC_ERROR_OUT_OF_MEMORY;
    if (rc == NVRTC_SUCCESS) rc = nvrtcGetCUBIN(prog, (char *)j->cubin);
    j->cubin_size = n;
    size_t np = 0; /* the PTX too, to see what the code does (cuda_scan_ptx) */
    char *ptx = NULL;
    if (rc == NVRTC_SUCCESS && nvrtcGetPTXSize(prog, &np) == NVRTC_SUCCESS && np &&
        (ptx = malloc(np)) && nvrtcGetPTX(prog, ptx) == NVRTC_SUCCESS) {
      ptx[np - 1] = '\0';
      j->artifacts = cuda_scan_ptx(ptx);
    }
    free(ptx);
  }
  nvrtcDestroyProgram(&prog);
  return rc;
}

static void *job_main(void *arg) {
  job *j = arg;
  j->rc = run_nvrtc(j, j->argc, j->argv);
  if (j->rc == NVRTC_ERROR_COMPILATION && !log_reports_error(j->log)) {
    /* NVRTC 13 drops ptxas's error message from the log when ptxas runs verbose: compile
     * again without -v to have it (the info lines of the first run stay in the log) */
    char *quiet[MAX_ARGS];
    int n = 0;
    for (int i = 0; i < j->argc; i++)
      if (strcmp(j->argv[i], PTXAS_VERBOSE)) quiet[n++] = j->argv[i];
    j->rc = run_nvrtc(j, n, quiet);
  }
  pthread_mutex_lock(&j->mu);
  j->done = 1;
  int was_abandoned = j->abandoned;
  int last = --j->refs == 0;
  pthread_cond_signal(&j->cv);
  pthread_mutex_unlock(&j->mu);
  if (was_abandoned) {
    pthread_mutex_lock(&ab_lock);
    abandoned--;
    pthread_cond_broadcast(&ab_cv);
    pthread_mutex_unlock(&ab_lock);
  }
  if (last) job_free(j);
  return NULL;
}

static void deadline_ts(double ms_from_now, struct timespec *ts) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  double s = floor(ms_from_now / 1e3);
  ts->tv_sec += (time_t)s;
  ts->tv_nsec += (long)((ms_from_now - s * 1e3) * 1e6);
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

/* Runs NVRTC for p with its deadline. On KEVO_OK *jout is the finished job (caller frees);
 * otherwise err says why (KEVO_E_TIMEOUT: given up on, or too many given up on before). */
static int run_job(const prepared *p, job **jout, kevo_error *err) {
  *jout = NULL;
  pthread_mutex_lock(&ab_lock);
  int busy = abandoned;
  pthread_mutex_unlock(&ab_lock);
  if (busy >= MAX_ABANDONED)
    return kevo_fail(err, KEVO_E_TIMEOUT,
                     "%d timed-out compiles are still running; not starting another", busy);
  /* the caller's deadline: what is left of it is this compile's time, if less */
  double timeout_s = p->timeout_s;
  if (p->o->deadline_s > 0) {
    double left = p->o->deadline_s - now_ms() / 1e3;
    if (left <= 0)
      return kevo_fail(err, KEVO_E_TIMEOUT, "compiling %s was not started: its deadline had passed",
                       p->name);
    if (left < timeout_s) timeout_s = left;
  }
  job *j = calloc(1, sizeof *j);
  if (!j) return kevo_fail(err, KEVO_E_NOMEM, "out of memory");
  pthread_mutex_init(&j->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&j->cv, &ca);
  pthread_condattr_destroy(&ca);
  j->refs = 2;
  j->deadline_ms = now_ms() + timeout_s * 1e3;
  j->src = malloc(p->len + 1);
  j->name = strdup(p->name);
  int ok = j->src && j->name;
  for (int i = 0; ok && i < p->argc; i++, j->argc++)
    ok = (j->argv[i] = strdup(p->argv[i])) != NULL;
  pthread_attr_t at;
  pthread_t t;
  if (ok) {
    memcpy(j->src, p->src, p->len);
    j->src[p->len] = '\0';
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, COMPILE_STACK);
    ok = pthread_create(&t, &at, job_main, j) == 0;
    pthread_attr_destroy(&at);
  }
  if (!ok) {
    job_free(j);
    return kevo_fail(err, KEVO_E_NOMEM, "cannot start a compile thread");
  }
  struct timespec ts;
  deadline_ts(timeout_s * 1e3, &ts);
  pthread_mutex_lock(&j->mu);
  while (!j->done)
    if (pthread_cond_timedwait(&j->cv, &j->mu, &ts) == ETIMEDOUT) break;
  int done = j->done;
  if (!done) {
    j->abandoned = 1;
    atomic_store(&j->cancel, 1);
    pthread_mutex_lock(&ab_lock);
    abandoned++;
    pthread_mutex_unlock(&ab_lock);
  }
  int last = --j->refs == 0;
  pthread_mutex_unlock(&j->mu);
  if (done && j->rc != NVRTC_ERROR_CANCELLED) {
    *jout = j;
    return KEVO_OK;
  }
  if (last) job_free(j);
  return kevo_fail(err, KEVO_E_TIMEOUT, "compiling %s took longer than %.3g s%s", p->name,
                   timeout_s,
                   timeout_s < p->timeout_s ? " (what was left before its deadline)" : "");
}

int cuda_compile_abandoned(void) {
  pthread_mutex_lock(&ab_lock);
  int n = abandoned;
  pthread_mutex_unlock(&ab_lock);
  return n;
}

int cuda_compile_drain(double timeout_s) {
  pthread_once(&env_once, env_init);
  struct timespec ts;
  deadline_ts(timeout_s * 1e3, &ts);
  pthread_mutex_lock(&ab_lock);
  while (abandoned > 0)
    if (pthread_cond_timedwait(&ab_cv, &ab_lock, &ts) == ETIMEDOUT) break;
  int left = abandoned;
  pthread_mutex_unlock(&ab_lock);
  return left;
}

/* ---- modules ------------------------------------------------------------------------------- */

void cuda_cache_clear(void) {
  cuda_cache_clear_memory();
}

static cuda_module *new_module(const prepared *p) {
  cuda_module *m = calloc(1, sizeof *m);
  if (m) {
    snprintf(m->hash, sizeof m->hash, "%s", p->hash);
    snprintf(m->arch, sizeof m->arch, "%s", p->arch);
  }
  return m;
}

/* A failed module's status, with its first error in err ("name:12:5: message"). */
static int compile_failure(const prepared *p, const cuda_module *m, kevo_error *err) {
  for (size_t i = 0; i < m->ndiags; i++) {
    const cuda_diag *d = &m->diags[i];
    if (strcmp(d->severity, "error")) continue;
    if (d->line > 0)
      return kevo_fail(err, KEVO_E_COMPILE, "%s:%d:%d: %s", p->name, d->line, d->col, d->message);
    return kevo_fail(err, KEVO_E_COMPILE, "%s: %s", p->name, d->message);
  }
  return kevo_fail(err, KEVO_E_COMPILE, "%s did not compile", p->name);
}

/* A module for a source refused before NVRTC saw it: one error at `line`. */
static int refuse(const prepared *p, int line, const char *why, cuda_module **out,
                  kevo_error *err) {
  cuda_module *m = new_module(p);
  char log[1024];
  snprintf(log, sizeof log, "%s(%d): error: %s\n", p->name, line, why);
  if (!m || !(m->log = strdup(log)) || cuda_scan_log(log, p->name, m)) {
    cuda_module_free(m);
    return kevo_fail(err, KEVO_E_NOMEM, "out of memory");
  }
  if (m->ndiags) m->diags[0].col = 1;
  *out = m;
  return compile_failure(p, m, err);
}

static int compile_prepared(const prepared *p, cuda_module **out, kevo_error *err) {
  double t0 = now_ms();
  *out = NULL;
  int rc, cached = p->o->no_cache ? 0 : cuda_cache_get(p->hash, out);
  if (cached) {
    (*out)->cached = cached;
    (*out)->compile_ms = now_ms() - t0;
    return (*out)->ok ? KEVO_OK : compile_failure(p, *out, err);
  }
  const char *nul = memchr(p->src, '\0', p->len);
  if (nul) {
    int line = 1;
    for (const char *c = p->src; c < nul; c++)
      line += *c == '\n';
    return refuse(p, line, "the source holds a NUL byte", out, err);
  }
  char why[512];
  const char *incs[3] = {env.ninc > 0 ? env.inc[0] : NULL, env.ninc > 1 ? env.inc[1] : NULL, NULL};
  if (!env.ninc)
    return kevo_fail(err, KEVO_E_UNSUPPORTED,
                     "the CUDA toolkit's headers were not found "
                     "(set KEVO_CUDA_INCLUDE to its include directory)");
  int bad = cuda_scan_includes(p->src, p->len, incs, env.shim_names, why, sizeof why);
  if (bad) return refuse(p, bad, why, out, err);

  job *j;
  if ((rc = run_job(p, &j, err))) return rc;
  cuda_module *m = new_module(p);
  if (!m || cuda_scan_log(j->log, p->name, m) || !(m->log = cuda_scan_clean_log(j->log, LOG_CAP))) {
    rc = kevo_fail(err, KEVO_E_NOMEM, "out of memory");
    goto out;
  }
  switch (j->rc) {
  case NVRTC_SUCCESS:
    m->ok = 1;
    m->cubin = j->cubin;
    m->cubin_size = j->cubin_size;
    m->artifacts = j->artifacts;
    j->cubin = NULL;
    break;
  case NVRTC_ERROR_COMPILATION:
    break;
  case NVRTC_ERROR_INVALID_OPTION:
    rc = kevo_fail(err, KEVO_E_ARG, "NVRTC refused the options: %.1000s", m->log);
    goto out;
  case NVRTC_ERROR_OUT_OF_MEMORY:
    rc = kevo_fail(err, KEVO_E_NOMEM, "NVRTC ran out of memory");
    goto out;
  default:
    rc = kevo_fail(err, KEVO_E_INTERNAL, "NVRTC failed: %s", nvrtcGetErrorString(j->rc));
    goto out;
  }
  if (!p->o->no_cache) cuda_cache_put(m);
  m->compile_ms = now_ms() - t0;
  *out = m;
  m = NULL;
  rc = (*out)->ok ? KEVO_OK : compile_failure(p, *out, err);
out:
  cuda_module_free(m);
  job_free(j);
  return rc;
}

int cuda_compile(const cuda_compile_opts *opts, cuda_module **out, kevo_error *err) {
  prepared p;
  *out = NULL;
  int rc = prepare(opts, &p, err);
  if (!rc) rc = compile_prepared(&p, out, err);
  prepared_free(&p);
  return rc;
}

/* ---- many at once -------------------------------------------------------------------------- */

typedef struct pool {
  prepared *ps;
  const size_t *todo; /* indices of the distinct requests */
  size_t ntodo;
  atomic_size_t next;
  cuda_module **out;
  int *rcs;
  kevo_error *errs;
} pool;

static void *pool_main(void *arg) {
  pool *pl = arg;
  for (;;) {
    size_t k = atomic_fetch_add(&pl->next, 1);
    if (k >= pl->ntodo) return NULL;
    size_t i = pl->todo[k];
    pl->rcs[i] = compile_prepared(&pl->ps[i], &pl->out[i], &pl->errs[i]);
  }
}

static size_t pool_size(void) {
  const char *e = getenv("KEVO_COMPILE_JOBS");
  long n = e ? atol(e) : 0;
  if (n >= 1 && n <= 64) return (size_t)n;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus < 1 ? 1 : cpus > MAX_POOL ? MAX_POOL : (size_t)cpus;
}

void cuda_compile_many(const cuda_compile_opts *opts, size_t n, cuda_module **out, int *rcs,
                       kevo_error *errs) {
  prepared *ps = calloc(n ? n : 1, sizeof *ps);
  size_t *first = calloc(n ? n : 1, sizeof *first), *todo = calloc(n ? n : 1, sizeof *todo);
  size_t ntodo = 0;
  for (size_t i = 0; i < n; i++) {
    out[i] = NULL;
    kevo_error_clear(&errs[i]);
    if (!ps || !first || !todo) {
      rcs[i] = kevo_fail(&errs[i], KEVO_E_NOMEM, "out of memory");
      continue;
    }
    rcs[i] = prepare(&opts[i], &ps[i], &errs[i]);
    first[i] = i;
    for (size_t k = 0; !rcs[i] && k < i; k++) {
      if (!rcs[k] && first[k] == k && strcmp(ps[k].hash, ps[i].hash) == 0 &&
          !opts[k].no_cache == !opts[i].no_cache) {
        first[i] = k;
        break;
      }
    }
    if (!rcs[i] && first[i] == i) todo[ntodo++] = i;
  }
  if (ntodo) {
    pool pl = {.ps = ps, .todo = todo, .ntodo = ntodo, .out = out, .rcs = rcs, .errs = errs};
    atomic_init(&pl.next, 0);
    size_t nthreads = pool_size();
    if (nthreads > ntodo) nthreads = ntodo;
    pthread_t threads[64];
    size_t started = 0;
    for (; started + 1 < nthreads; started++)
      if (pthread_create(&threads[started], NULL, pool_main, &pl)) break;
    pool_main(&pl); /* this thread works too */
    for (size_t t = 0; t < started; t++)
      pthread_join(threads[t], NULL);
  }
  for (size_t i = 0; ps && first && todo && i < n; i++) {
    size_t f = first[i];
    if (rcs[i] || f == i) continue;
    rcs[i] = rcs[f];
    errs[i] = errs[f];
    if (out[f] && !(out[i] = cuda_module_clone(out[f])))
      rcs[i] = kevo_fail(&errs[i], KEVO_E_NOMEM, "out of memory");
    else if (out[i])
      out[i]->cached = 1;
  }
  for (size_t i = 0; ps && i < n; i++)
    prepared_free(&ps[i]);
  free(ps);
  free(first);
  free(todo);
}

/* ---- what the code does --------------------------------------------------------------------- */

static const char *const artifact_text[CUDA_ART_COUNT] = {
    "reads the global timer or a clock register (%globaltimer, %clock, %clock64)",
    "sleeps (nanosleep)",
    "allocates device memory from a kernel (malloc/free)",
    "launches kernels from the device",
    "sets L2 cache priorities or hints (createpolicy, evict_last, applypriority, discard)",
};

const char *cuda_artifact_text(int i) {
  return i >= 0 && i < CUDA_ART_COUNT ? artifact_text[i] : "?";
}

unsigned cuda_scan_ptx(const char *ptx) {
  static const struct {
    const char *needle;
    unsigned bit;
  } marks[] = {{"%globaltimer", CUDA_ART_TIMER},      {"%clock", CUDA_ART_TIMER},
               {"nanosleep", CUDA_ART_SLEEP},         {"malloc", CUDA_ART_MALLOC},
               {"cudaLaunchDevice", CUDA_ART_LAUNCH}, {"cudaGetParameterBuffer", CUDA_ART_LAUNCH},
               {"createpolicy", CUDA_ART_L2POLICY},   {"evict_last", CUDA_ART_L2POLICY},
               {"applypriority", CUDA_ART_L2POLICY},  {"discard.global", CUDA_ART_L2POLICY},
               {"L2::cache_hint", CUDA_ART_L2POLICY}};
  unsigned bits = 0;
  for (size_t k = 0; ptx && k < sizeof marks / sizeof marks[0]; k++)
    if (strstr(ptx, marks[k].needle)) bits |= marks[k].bit;
  return bits;
}
