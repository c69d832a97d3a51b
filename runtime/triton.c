/* triton.c: the pool of Triton compile servers, the compile cache, and the compile loop.
 * See triton.h; the sandbox itself is in triton_spawn.c, the server in python/triton_server.py. */
#include "triton.h"

#include "proto.h"
#include "resources.h"
#include "sha256.h"
#include "triton_cache.h"
#include "triton_spawn.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The server and the two modules it imports from its own directory. */
static const char *const server_files[] = {"python/triton_server.py", "python/triton_check.py",
                                           "python/triton_sandbox.py"};
enum { MAX_SERVERS = 16 };
/* A source longer than this is refused before it reaches a server: 6x escaped it still fits a
 * frame header, and no kernel is nearly this long. */
#define MAX_SOURCE ((size_t)1 << 20)
/* kevo's own deadline is the compile's plus this: the server kills a late compile process
 * itself (and stays warm); kevo kills the server only when the server itself stops answering. */
#define SERVER_GRACE_S 15.0
/* Past a compile's deadline_s a server that has not answered is killed after this: the server
 * kills its compile process at the timeout it was given, so this is for a server that hangs. */
#define DEADLINE_GRACE_S 0.5
/* The least timeout a server is given (it reads 0 as its default, 120 s). */
#define MIN_TIMEOUT_S 0.05
/* The unprivileged user the servers run as when kevo runs as root (nobody on Debian). */
#define DROP_UID 65534
#define DROP_GID 65534
#define MAX_DIAG 2000 /* bytes of one diagnostic's message */

enum { SRV_DEAD, SRV_STARTING, SRV_IDLE, SRV_BUSY };

typedef struct server {
  triton_proc proc;
  int state;
  double deadline; /* monotonic seconds: start or compile deadline */
  long job;        /* index of the job it compiles (SRV_BUSY) */
  double sent;     /* when the job was sent */
} server;

struct triton_pool {
  triton_pool_opts o;
  char python[PATH_MAX], dir[PATH_MAX], script[PATH_MAX];
  char server_sha[KEVO_HASH_HEX], version[32], pyversion[32];
  char landlock_note[256];
  int landlock_abi;
  int nmax;
  server srv[MAX_SERVERS];
  long next_id;
  triton_cache *cache;
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int is_exec(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The interpreter: given, $KEVO_PYTHON, $KEVO_VENV, a .venv beside the binary or its parent
 * directory (build/kevo in a source tree), python3 on PATH. Kept as found: a venv's python is a
 * symlink that must not be resolved, or it would lose its site-packages. */
static int find_python(const char *given, char *out, size_t n, kevo_error *err) {
  const char *env = getenv("KEVO_PYTHON");
  if (given && *given) env = given;
  if (env && *env) {
    if (strchr(env, '/')) {
      if (!is_exec(env)) return kevo_fail(err, KEVO_E_UNSUPPORTED, "python '%s' not found", env);
      snprintf(out, n, "%s", env);
      return KEVO_OK;
    }
  }
  const char *name = env && *env ? env : "python3";
  char cand[PATH_MAX];
  const char *venv = getenv("KEVO_VENV");
  if (!(env && *env) && venv && *venv) {
    snprintf(cand, sizeof cand, "%s/bin/python3", venv);
    if (is_exec(cand)) goto found;
  }
  char exe[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (!(env && *env) && len > 0) {
    exe[len] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    snprintf(cand, sizeof cand, "%s/.venv/bin/python3", exe);
    if (is_exec(cand)) goto found;
    snprintf(cand, sizeof cand, "%s/../.venv/bin/python3", exe);
    if (is_exec(cand)) goto found;
  }
  const char *path = getenv("PATH");
  for (const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin"; p && *p;) {
    const char *colon = strchr(p, ':');
    size_t dl = colon ? (size_t)(colon - p) : strlen(p);
    snprintf(cand, sizeof cand, "%.*s/%s", (int)dl, p, name);
    if (dl && is_exec(cand)) goto found;
    p = colon ? colon + 1 : NULL;
  }
  return kevo_fail(err, KEVO_E_UNSUPPORTED,
                   "no python for Triton: set KEVO_PYTHON, or run scripts/setup.sh (a .venv "
                   "beside the source tree), or put %s on PATH",
                   name);
found:
  snprintf(out, n, "%s", cand);
  return KEVO_OK;
}

int triton_pool_new(const triton_pool_opts *opts, triton_pool **out, kevo_error *err) {
  *out = NULL;
  triton_pool *p = calloc(1, sizeof *p);
  if (!p) return kevo_fail(err, KEVO_E_NOMEM, "out of memory");
  if (opts) p->o = *opts;
  /* The operator's way out when Python or Triton sit where nobody cannot read (docs/triton.md). */
  const char *keep = getenv("KEVO_TRITON_KEEP_USER");
  if (keep && *keep && strcmp(keep, "0") != 0) p->o.keep_user = 1;
  int rc = find_python(p->o.python, p->python, sizeof p->python, err);
  if (rc) goto fail;
  p->o.python = NULL; /* not owned */
  if (p->o.timeout_s <= 0) p->o.timeout_s = 120;
  if (p->o.start_timeout_s <= 0) p->o.start_timeout_s = 180;
  p->o.arch = NULL;
  const char *arch = opts && opts->arch ? opts->arch : getenv("KEVO_ARCH");
  snprintf(p->version, sizeof p->version, "%s", ""); /* known after the first hello */
  p->nmax = p->o.servers;
  const char *envn = getenv("KEVO_TRITON_SERVERS");
  if (p->nmax <= 0 && envn) p->nmax = atoi(envn);
  if (p->nmax <= 0) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    p->nmax = cpus < 1 ? 1 : cpus > 4 ? 4 : (int)cpus;
  }
  if (p->nmax > MAX_SERVERS) p->nmax = MAX_SERVERS;
  /* A compile process's warm-up runs beside its server's compile: one more CPU per server, on
   * a machine with CPUs to spare (on 2, shared with kevo, the worker and the strategy, it slowed
   * compiles down). */
  const char *pre = getenv("KEVO_TRITON_PREFAULT");
  if (pre && *pre) p->o.prefault = strcmp(pre, "0") != 0 ? 1 : -1;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (p->o.prefault == 0) p->o.prefault = ncpu >= 4 && ncpu >= 2L * p->nmax ? 1 : -1;
  for (int i = 0; i < MAX_SERVERS; i++)
    p->srv[i].proc = (triton_proc){0, -1, -1};
  const char *tmp = getenv("TMPDIR");
  snprintf(p->dir, sizeof p->dir, "%s/kevo-triton-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(p->dir)) {
    rc = kevo_fail(err, KEVO_E_IO, "mkdtemp %s: %s", p->dir, strerror(errno));
    goto fail;
  }
  /* As root the servers run as nobody: they must reach their files, never write them. */
  if (geteuid() == 0) chmod(p->dir, 0711);
  kevo_sha256 sha;
  kevo_sha256_init(&sha);
  for (size_t i = 0; i < sizeof server_files / sizeof *server_files; i++) {
    const struct kevo_resource *res = kevo_resource_find(server_files[i]);
    if (!res) {
      rc = kevo_fail(err, KEVO_E_INTERNAL, "%s is not embedded in this binary", server_files[i]);
      goto fail;
    }
    kevo_sha256_update(&sha, res->data, res->size);
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", p->dir, strrchr(server_files[i], '/') + 1);
    if (i == 0) snprintf(p->script, sizeof p->script, "%s", path);
    if (triton_write_file(path, res->data, res->size, 0444) != 0) {
      rc = kevo_fail(err, KEVO_E_IO, "writing %s: %s", path, strerror(errno));
      goto fail;
    }
  }
  kevo_sha256_final_hex(&sha, p->server_sha);
  /* keep the warm-up arch in the pool's own storage */
  static const char *const known[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100"};
  p->o.arch = "sm_90";
  for (size_t i = 0; arch && i < sizeof known / sizeof *known; i++)
    if (!strcmp(arch, known[i])) p->o.arch = known[i];
  p->cache = triton_cache_new(!p->o.no_disk_cache);
  if (!p->cache) {
    rc = kevo_fail(err, KEVO_E_NOMEM, "out of memory");
    goto fail;
  }
  p->landlock_abi = triton_landlock_abi(p->landlock_note, sizeof p->landlock_note);
  struct sigaction sa;
  if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
  *out = p;
  return KEVO_OK;
fail:
  triton_pool_free(p);
  return rc;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  return remove(path) == 0 ? 0 : 0;
}

void triton_pool_free(triton_pool *p) {
  if (!p) return;
  for (int i = 0; i < MAX_SERVERS; i++) {
    server *s = &p->srv[i];
    if (s->state == SRV_IDLE) { /* a polite goodbye first: it exits at once */
      cJSON *bye = cJSON_CreateObject();
      cJSON_AddStringToObject(bye, "op", "bye");
      kevo_frame_write(s->proc.to_fd, bye, NULL, 0, NULL);
      cJSON_Delete(bye);
    }
    triton_proc_kill(&s->proc);
  }
  triton_cache_free(p->cache);
  if (p->dir[0]) nftw(p->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  free(p);
}

int triton_pool_landlock(const triton_pool *p, const char **note) {
  if (note) *note = p->landlock_note;
  return p->landlock_abi;
}

const char *triton_pool_python(const triton_pool *p) {
  return p->python;
}

/* The last bytes of a server's log, on one line, for an error message. */
static void log_tail(const triton_pool *p, int i, char *out, size_t n) {
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/s%d/log", p->dir, i);
  out[0] = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  off_t size = lseek(fd, 0, SEEK_END);
  off_t from = size > (off_t)n - 1 ? size - (off_t)n + 1 : 0;
  ssize_t r = pread(fd, out, n - 1, from);
  close(fd);
  if (r <= 0) return;
  out[r] = 0;
  while (r > 0 && (out[r - 1] == '\n' || out[r - 1] == ' '))
    out[--r] = 0;
  char *last = strrchr(out, '\n'); /* the last line says most (a Python exception) */
  if (last && strlen(last + 1) > 20) memmove(out, last + 1, strlen(last + 1) + 1);
}

static void describe_status(int status, char *out, size_t n) {
  if (status < 0)
    snprintf(out, n, "gone");
  else if (WIFSIGNALED(status))
    snprintf(out, n, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else
    snprintf(out, n, "exited with status %d", WEXITSTATUS(status));
}

/* Memory each compile process may map: a quarter of the machine's RAM shared among the servers,
 * at least 4 GiB (Triton and LLVM map about 2.5 GiB before compiling anything), at most 32 GiB. */
static double child_as_limit(int servers) {
  double ram = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
  double gib = (double)(1ull << 30), lim = ram > 0 ? ram / 4 / (servers > 0 ? servers : 1) : 0;
  return lim < 4 * gib ? 4 * gib : lim > 32 * gib ? 32 * gib : lim;
}

/* The server's address space: its children's limit and room for ptxas's own. */
static double server_as_limit(int servers) {
  return child_as_limit(servers) + 4.0 * (double)(1ull << 30);
}

static int server_start(triton_pool *p, int i, kevo_error *err) {
  char work[PATH_MAX + 16], sub[PATH_MAX + 32], logp[PATH_MAX + 32];
  snprintf(work, sizeof work, "%s/s%d", p->dir, i);
  mkdir(work, 0700);
  snprintf(sub, sizeof sub, "%s/tmp", work);
  mkdir(sub, 0700);
  snprintf(sub, sizeof sub, "%s/cache", work);
  mkdir(sub, 0700);
  snprintf(logp, sizeof logp, "%s/log", work);
  int drop = geteuid() == 0 && !p->o.keep_user;
  if (drop) { /* the server's user owns its work directory, and nothing else */
    static const char *const subs[] = {"", "/tmp", "/cache"};
    for (size_t k = 0; k < sizeof subs / sizeof *subs; k++) {
      snprintf(sub, sizeof sub, "%s%s", work, subs[k]);
      if (chown(sub, DROP_UID, DROP_GID) != 0)
        return kevo_fail(err, KEVO_E_IO, "chown %s: %s", sub, strerror(errno));
    }
  }
  triton_spawn_opts so = {.python = p->python,
                          .script = p->script,
                          .workdir = work,
                          .log_path = logp,
                          .arch = p->o.arch,
                          .landlock_abi = p->landlock_abi,
                          .cpu_s = 4 * 3600.0,
                          .as_bytes = server_as_limit(p->nmax),
                          .child_as_bytes = child_as_limit(p->nmax),
                          .fsize_bytes = 512.0 * (1 << 20),
                          .nofile = 512,
                          .drop_uid = drop ? DROP_UID : -1,
                          .drop_gid = drop ? DROP_GID : -1,
                          .unchecked = p->o.no_allowlist,
                          .prefault = p->o.prefault > 0};
  int rc = triton_spawn(&so, &p->srv[i].proc, err);
  if (rc) return rc;
  p->srv[i].state = SRV_STARTING;
  p->srv[i].deadline = now_s() + p->o.start_timeout_s;
  return KEVO_OK;
}

/* Handles a started server's hello (or its death). KEVO_OK when it is ready. */
static int server_hello(triton_pool *p, int i, kevo_error *err) {
  server *s = &p->srv[i];
  kevo_frame f = {0};
  double left = s->deadline - now_s();
  int rc = kevo_frame_read(s->proc.from_fd, &f, left > 0 ? (int)(left * 1000) : 0, err);
  if (rc == KEVO_OK) {
    cJSON *ok = cJSON_GetObjectItem(f.header, "ok");
    if (cJSON_IsTrue(ok)) {
      const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(f.header, "triton"));
      const char *py = cJSON_GetStringValue(cJSON_GetObjectItem(f.header, "python"));
      snprintf(p->version, sizeof p->version, "%s", v ? v : "?");
      snprintf(p->pyversion, sizeof p->pyversion, "%s", py ? py : "?");
      s->state = SRV_IDLE;
      kevo_frame_free(&f);
      return KEVO_OK;
    }
    const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(f.header, "error"));
    rc = kevo_fail(err, KEVO_E_UNSUPPORTED, "Triton cannot start in %s: %s", p->python,
                   why ? why : "no reason given");
    kevo_frame_free(&f);
    triton_proc_reap(&s->proc);
  } else {
    char tail[600], how[96];
    int timed_out = rc == KEVO_E_TIMEOUT;
    int st = timed_out ? triton_proc_kill(&s->proc) : triton_proc_reap(&s->proc);
    log_tail(p, i, tail, sizeof tail);
    describe_status(st, how, sizeof how);
    if (timed_out)
      rc = kevo_fail(err, KEVO_E_TIMEOUT, "the Triton compile server (%s) did not start in %.0f s",
                     p->python, p->o.start_timeout_s);
    else
      rc = kevo_fail(err, KEVO_E_UNSUPPORTED, "the Triton compile server (%s) %s at start: %s",
                     p->python, how, tail[0] ? tail : "no output");
  }
  s->state = SRV_DEAD;
  return rc;
}

int triton_pool_ready(triton_pool *p, char *version, size_t version_len, kevo_error *err) {
  int rc = KEVO_OK, any = -1;
  for (int i = 0; i < p->nmax && any < 0; i++)
    if (p->srv[i].state == SRV_IDLE || p->srv[i].state == SRV_STARTING) any = i;
  if (any < 0) {
    any = 0;
    rc = server_start(p, 0, err);
  }
  if (!rc && p->srv[any].state == SRV_STARTING) rc = server_hello(p, any, err);
  if (!rc && version) snprintf(version, version_len, "%s", p->version);
  return rc;
}

/* Sorts an object's keys (recursively), so equal tables hash equally whatever Lua's order. */
static void sort_keys(cJSON *o) {
  if (!o) return;
  for (cJSON *c = o->child; c; c = c->next)
    sort_keys(c);
  if (!cJSON_IsObject(o)) return;
  cJSON *sorted = NULL;
  while (o->child) {
    cJSON *c = o->child;
    o->child = c->next;
    cJSON **at = &sorted;
    while (*at && strcmp((*at)->string, c->string) <= 0)
      at = &(*at)->next;
    c->next = *at;
    *at = c;
  }
  o->child = sorted;
  cJSON *prev = NULL;
  for (cJSON *c = sorted; c; prev = c, c = c->next)
    c->prev = prev;
  if (sorted) sorted->prev = prev; /* cJSON keeps the tail in the head's prev */
}

static const char *opt_arch(const triton_compile_opts *o) {
  const char *a = o->arch ? o->arch : getenv("KEVO_ARCH");
  return a && *a ? a : "sm_90";
}

/* The request header for the server (without the id), canonical: used for the hash too. */
static cJSON *make_request(const triton_compile_opts *o) {
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "op", "compile");
  cJSON_AddStringToObject(r, "kernel", o->kernel);
  cJSON_AddStringToObject(r, "arch", opt_arch(o));
  cJSON_AddNumberToObject(r, "num_warps", o->num_warps > 0 ? o->num_warps : 4);
  cJSON_AddNumberToObject(r, "num_stages", o->num_stages > 0 ? o->num_stages : 3);
  cJSON *sig = o->signature ? cJSON_Duplicate(o->signature, 1) : cJSON_CreateObject();
  cJSON *cx = o->constexprs ? cJSON_Duplicate(o->constexprs, 1) : cJSON_CreateObject();
  sort_keys(sig);
  sort_keys(cx);
  cJSON_AddItemToObject(r, "signature", sig);
  cJSON_AddItemToObject(r, "constexprs", cx);
  return r;
}

static void request_hash(const triton_pool *p, const triton_compile_opts *o, const cJSON *req,
                         char hex[KEVO_HASH_HEX]) {
  kevo_sha256 s;
  kevo_sha256_init(&s);
  char *text = cJSON_PrintUnformatted(req);
  char head[256];
  snprintf(head, sizeof head, "kevo-triton-v2\n%s\n%s\n%s\n%s", p->server_sha, p->version,
           p->pyversion, p->o.no_allowlist ? "no-allowlist\n" : "");
  kevo_sha256_update(&s, head, strlen(head));
  if (text) kevo_sha256_update(&s, text, strlen(text));
  kevo_sha256_update(&s, "\n", 1);
  kevo_sha256_update(&s, o->source, o->len);
  kevo_sha256_final_hex(&s, hex);
  free(text);
}

static int get_int(const cJSON *o, const char *k, int def) {
  const cJSON *v = cJSON_GetObjectItem(o, k);
  return cJSON_IsNumber(v) ? v->valueint : cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}

/* A copy of text from a compile process for people and the model: at most n bytes, control
 * characters (terminal escapes) as '?', newlines and tabs kept. NULL when out of memory. */
static char *printable_copy(const char *s, size_t n) {
  size_t len = strnlen(s, n);
  char *out = malloc(len + 1);
  if (!out) return NULL;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    out[i] = (c < 32 && c != '\n' && c != '\t') || c == 127 ? '?' : (char)c;
  }
  out[len] = 0;
  return out;
}

/* A module from a server's reply (which it copies). KEVO_OK or KEVO_E_COMPILE. */
static int module_from_reply(const cJSON *reply, const void *cubin, size_t cubin_size,
                             const char *filename, triton_module **out, kevo_error *err) {
  triton_module *m = calloc(1, sizeof *m);
  if (!m) return kevo_fail(err, KEVO_E_NOMEM, "out of memory");
  *out = m;
  const cJSON *diags = cJSON_GetObjectItem(reply, "diagnostics");
  size_t nd = (size_t)cJSON_GetArraySize(diags);
  m->diags = nd ? calloc(nd, sizeof *m->diags) : NULL;
  for (const cJSON *d = diags ? diags->child : NULL; d && m->diags; d = d->next) {
    triton_diag *td = &m->diags[m->ndiags++];
    td->line = get_int(d, "line", 0);
    td->col = get_int(d, "col", 0);
    const char *sev = cJSON_GetStringValue(cJSON_GetObjectItem(d, "severity"));
    snprintf(td->severity, sizeof td->severity, "%s", sev ? sev : "error");
    const char *msg = cJSON_GetStringValue(cJSON_GetObjectItem(d, "message"));
    td->message = printable_copy(msg ? msg : "", MAX_DIAG);
  }
  if (!cJSON_IsTrue(cJSON_GetObjectItem(reply, "ok"))) {
    const char *e = cJSON_GetStringValue(cJSON_GetObjectItem(reply, "error"));
    if (cJSON_IsTrue(cJSON_GetObjectItem(reply, "timeout")))
      return kevo_fail(err, KEVO_E_TIMEOUT, "%.200s (the compile process was killed)",
                       e ? e : "deadline passed");
    if (cJSON_IsTrue(cJSON_GetObjectItem(reply, "internal")))
      return kevo_fail(err, KEVO_E_WORKER, "%.500s", e ? e : "the compile sandbox failed");
    char *clean = printable_copy(e ? e : "rejected", MAX_DIAG);
    int rc;
    if (m->ndiags && m->diags[0].line > 0)
      rc = kevo_fail(err, KEVO_E_COMPILE, "%s:%d:%d: %s", filename ? filename : "candidate.py",
                     m->diags[0].line, m->diags[0].col, clean ? clean : "rejected");
    else
      rc = kevo_fail(err, KEVO_E_COMPILE, "%s", clean ? clean : "rejected");
    free(clean);
    return rc;
  }
  const cJSON *info = cJSON_GetObjectItem(reply, "info");
  const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(info, "name"));
  if (!info || !name || !cubin_size)
    return kevo_fail(err, KEVO_E_WORKER, "the compile server's reply lacks info or a cubin");
  m->cubin = malloc(cubin_size);
  m->info = cJSON_Duplicate(info, 1);
  if (!m->cubin || !m->info) return kevo_fail(err, KEVO_E_NOMEM, "out of memory");
  memcpy(m->cubin, cubin, cubin_size);
  m->cubin_size = cubin_size;
  snprintf(m->name, sizeof m->name, "%s", name);
  m->num_warps = get_int(info, "num_warps", 4);
  m->num_stages = get_int(info, "num_stages", 3);
  m->threads = get_int(info, "threads", 32 * m->num_warps);
  m->shared = get_int(info, "shared", 0);
  m->num_ctas = get_int(info, "num_ctas", 1);
  m->launch_pdl = get_int(info, "launch_pdl", 0);
  m->launch_cooperative_grid = get_int(info, "launch_cooperative_grid", 0);
  const char *arch = cJSON_GetStringValue(cJSON_GetObjectItem(info, "arch"));
  snprintf(m->arch, sizeof m->arch, "%s", arch ? arch : "");
  const char *tv = cJSON_GetStringValue(cJSON_GetObjectItem(info, "triton_version"));
  snprintf(m->triton_version, sizeof m->triton_version, "%s", tv ? tv : "");
  for (const cJSON *x = cJSON_GetObjectItem(info, "extra_args")
                            ? cJSON_GetObjectItem(info, "extra_args")->child
                            : NULL;
       x && m->nextra < TRITON_MAX_EXTRA; x = x->next) {
    triton_extra_arg *e = &m->extra[m->nextra++];
    const char *xn = cJSON_GetStringValue(cJSON_GetObjectItem(x, "name"));
    snprintf(e->name, sizeof e->name, "%s", xn ? xn : "scratch");
    const cJSON *b = cJSON_GetObjectItem(x, "bytes_per_program"),
                *a = cJSON_GetObjectItem(x, "align");
    e->bytes_per_program = cJSON_IsNumber(b) ? (int64_t)b->valuedouble : 0;
    e->align = cJSON_IsNumber(a) ? (int64_t)a->valuedouble : 1;
  }
  m->ok = 1;
  return KEVO_OK;
}

/* --- the compile loop ------------------------------------------------------------------ */

typedef struct job {
  const triton_compile_opts *o;
  cJSON *req;
  char hash[KEVO_HASH_HEX];
  int send_failures;
  int pending; /* waits for a server */
  int running; /* sent to a server */
  int done;
} job;

static int send_job(triton_pool *p, int si, job *j, long id, kevo_error *err) {
  server *s = &p->srv[si];
  cJSON *h = cJSON_Duplicate(j->req, 1);
  cJSON_AddNumberToObject(h, "id", (double)id);
  cJSON_AddItemToObject(h, "src", cJSON_CreateStringReference(j->o->source));
  cJSON_AddStringToObject(h, "filename", j->o->filename ? j->o->filename : "candidate.py");
  double timeout = j->o->timeout_s > 0 ? j->o->timeout_s : p->o.timeout_s;
  double now = now_s(), left = j->o->deadline_s > 0 ? j->o->deadline_s - now : timeout;
  if (left < timeout) timeout = left > MIN_TIMEOUT_S ? left : MIN_TIMEOUT_S;
  cJSON_AddNumberToObject(h, "timeout", timeout);
  int rc = kevo_frame_write(s->proc.to_fd, h, NULL, 0, err);
  cJSON_Delete(h);
  if (rc) return rc;
  s->state = SRV_BUSY;
  s->sent = now;
  s->deadline = s->sent + timeout + SERVER_GRACE_S;
  if (j->o->deadline_s > 0 && j->o->deadline_s + DEADLINE_GRACE_S < s->deadline)
    s->deadline = j->o->deadline_s + DEADLINE_GRACE_S;
  return KEVO_OK;
}

/* A server died or was killed: reap it and start a fresh one at once, so it warms up while
 * the driver does other work (the next compile waits for its hello if need be). */
static void server_replace(triton_pool *p, int si, int kill_it, char *how, size_t how_len,
                           char *tail, size_t tail_len) {
  server *s = &p->srv[si];
  int st = kill_it ? triton_proc_kill(&s->proc) : triton_proc_reap(&s->proc);
  describe_status(st, how, how_len);
  log_tail(p, si, tail, tail_len);
  s->state = SRV_DEAD;
  kevo_error ignored;
  server_start(p, si, &ignored);
}

static void finish_reply(triton_pool *p, job *j, kevo_frame *f, double ms, triton_module **out,
                         int *rc, kevo_error *err) {
  const void *cubin = f->nblobs ? f->blobs[0].data : NULL;
  size_t size = f->nblobs ? f->blobs[0].size : 0;
  *rc = module_from_reply(f->header, cubin, size, j->o->filename, out, err);
  /* Only a verdict on the source itself is remembered: never a deadline or a sandbox failure. */
  if (*rc == KEVO_OK || *rc == KEVO_E_COMPILE)
    triton_cache_put(p->cache, j->hash, f->header, cubin, size, *rc == KEVO_OK);
  if (*out) {
    (*out)->compile_ms = ms;
    snprintf((*out)->hash, sizeof(*out)->hash, "%s", j->hash);
  }
}

/* One triton_compile_many call: its jobs and where their results go. */
typedef struct batch {
  triton_pool *p;
  size_t n, left; /* jobs, and those not finished */
  job *jobs;
  triton_module **out;
  int *rcs;
  kevo_error *errs;
  int start_failures;
  kevo_error start_err;
} batch;

/* Job i is finished with rcs[i] (and errs[i]) as already set. */
static void batch_done(batch *b, size_t i) {
  b->jobs[i].pending = 0;
  b->jobs[i].running = 0;
  b->jobs[i].done = 1;
  b->left--;
}

/* The offset of the first byte that makes src no Python text: a NUL (the request would end
 * there: kevo would archive text it did not compile) or a byte that is not strict UTF-8
 * (overlong, a surrogate, past U+10FFFF, cut short: the server could not read the request).
 * len when there is none. */
static size_t source_bad_byte(const char *src, size_t len) {
  const unsigned char *s = (const unsigned char *)src;
  for (size_t i = 0; i < len;) {
    unsigned c = s[i];
    size_t n = c < 0x80                 ? 0
               : c >= 0xC2 && c <= 0xDF ? 1
               : c >= 0xE0 && c <= 0xEF ? 2
               : c >= 0xF0 && c <= 0xF4 ? 3
                                        : 9;
    if (c == 0 || n == 9 || i + n >= len + (n == 0)) return i;
    unsigned lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80; /* no overlong forms */
    unsigned hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF; /* no surrogates, <= U+10FFFF */
    for (size_t k = 1; k <= n; k++)
      if (s[i + k] < (k == 1 ? lo : 0x80) || s[i + k] > (k == 1 ? hi : 0xBF)) return i;
    i += n + 1;
  }
  return len;
}

/* Why a source is refused before any server sees it (over the cap, not Python text), or
 * KEVO_OK. Refused once, here: never sent, never retried. */
static int source_refused(const triton_compile_opts *o, kevo_error *err) {
  if (o->len > MAX_SOURCE)
    return kevo_fail(err, KEVO_E_COMPILE,
                     "the source is %zu bytes, over the %zu-byte cap for a Triton candidate",
                     o->len, MAX_SOURCE);
  size_t at = source_bad_byte(o->source, o->len);
  if (at == o->len) return KEVO_OK;
  size_t line = 1, col = 1;
  for (size_t i = 0; i < at; i++, col++)
    if (o->source[i] == '\n') line++, col = 0;
  return kevo_fail(
      err, KEVO_E_COMPILE, "%s:%zu:%zu: %s (byte 0x%02x): a Triton source is UTF-8 text",
      o->filename ? o->filename : "candidate.py", line, col,
      o->source[at] ? "a byte that is not UTF-8" : "a NUL byte", (unsigned char)o->source[at]);
}

/* Refuses bad options, serves what the cache holds, and marks the rest pending. */
static void batch_prepare(batch *b, const triton_compile_opts *opts) {
  triton_pool *p = b->p;
  triton_module **out = b->out;
  for (size_t i = 0; i < b->n; i++) {
    job *j = &b->jobs[i];
    j->o = &opts[i];
    if (!j->o->source || !j->o->kernel) {
      b->rcs[i] =
          kevo_fail(&b->errs[i], KEVO_E_ARG, "a Triton compile needs a source and a kernel");
      continue;
    }
    if ((b->rcs[i] = source_refused(j->o, &b->errs[i]))) continue;
    double t0 = now_s();
    j->req = make_request(j->o);
    request_hash(p, j->o, j->req, j->hash);
    cJSON *reply = NULL;
    kevo_buf cubin;
    kevo_buf_init(&cubin, (size_t)1 << 30);
    int cached = triton_cache_get(p->cache, j->hash, &reply, &cubin);
    if (cached)
      b->rcs[i] =
          module_from_reply(reply, cubin.data, cubin.len, j->o->filename, &out[i], &b->errs[i]);
    cJSON_Delete(reply);
    kevo_buf_free(&cubin);
    if (cached && out[i]) {
      out[i]->cached = cached;
      out[i]->compile_ms = (now_s() - t0) * 1000.0;
      snprintf(out[i]->hash, sizeof out[i]->hash, "%s", j->hash);
      continue;
    }
    j->pending = 1;
    b->left++;
  }
}

/* Jobs still waiting for a server when their deadline_s passes are done: not started. */
static void batch_expire(batch *b) {
  double now = now_s();
  for (size_t i = 0; i < b->n; i++) {
    job *j = &b->jobs[i];
    if (!j->pending || j->o->deadline_s <= 0 || now < j->o->deadline_s) continue;
    b->rcs[i] = kevo_fail(&b->errs[i], KEVO_E_TIMEOUT,
                          "compiling '%s' was not started: its deadline had passed", j->o->kernel);
    batch_done(b, i);
  }
}

/* Hands pending jobs to idle servers. */
static void batch_dispatch(batch *b) {
  triton_pool *p = b->p;
  job *jobs = b->jobs;
  size_t next = 0, n = b->n;
  for (int si = 0; si < p->nmax; si++) {
    if (p->srv[si].state != SRV_IDLE) continue;
    while (next < n && !jobs[next].pending)
      next++;
    if (next == n) break;
    kevo_error werr;
    if (send_job(p, si, &jobs[next], p->next_id++, &werr) != KEVO_OK) {
      char how[96], tail[16];
      server_replace(p, si, 1, how, sizeof how, tail, sizeof tail);
      if (++jobs[next].send_failures < 2) continue; /* another server may take it */
      /* twice: the job, not the server, is the problem */
      b->rcs[next] = kevo_fail(&b->errs[next], KEVO_E_WORKER,
                               "the Triton compile server could not take '%s' (%s), twice",
                               jobs[next].o->kernel, werr.msg);
      batch_done(b, next);
      continue;
    }
    p->srv[si].job = (long)next;
    jobs[next].pending = 0;
    jobs[next].running = 1;
  }
}

/* Starts more servers while jobs wait and the cap allows. Returns how many are alive. */
static int batch_start_servers(batch *b) {
  triton_pool *p = b->p;
  size_t npending = 0;
  int alive = 0, ready = 0;
  for (size_t i = 0; i < b->n; i++)
    npending += b->jobs[i].pending;
  for (int si = 0; si < p->nmax; si++) {
    int st = p->srv[si].state;
    alive += st != SRV_DEAD;
    ready += st == SRV_IDLE || st == SRV_STARTING;
  }
  for (int si = 0; si < p->nmax && (size_t)ready < npending && b->start_failures < 2; si++) {
    if (p->srv[si].state != SRV_DEAD) continue;
    if (server_start(p, si, &b->start_err) == KEVO_OK) {
      ready++;
      alive++;
    } else
      b->start_failures++;
  }
  return alive;
}

/* Takes what server si has to say: its hello, or the reply to its job. */
static void batch_read(batch *b, int si) {
  triton_pool *p = b->p;
  server *s = &p->srv[si];
  if (s->state == SRV_STARTING) {
    if (server_hello(p, si, &b->start_err) != KEVO_OK) b->start_failures++;
    return;
  }
  job *j = &b->jobs[s->job];
  size_t ji = (size_t)s->job;
  kevo_frame f = {0};
  double left_s = s->deadline - now_s();
  kevo_error rerr;
  int r = kevo_frame_read(s->proc.from_fd, &f, left_s > 0 ? (int)(left_s * 1000) : 0, &rerr);
  if (r == KEVO_E_TIMEOUT) return; /* the deadline check kills it */
  if (r == KEVO_OK) {
    finish_reply(p, j, &f, (now_s() - s->sent) * 1000.0, &b->out[ji], &b->rcs[ji], &b->errs[ji]);
    kevo_frame_free(&f);
    s->state = SRV_IDLE;
    batch_done(b, ji);
    return;
  }
  char how[96], tail[600];
  server_replace(p, si, r != KEVO_E_IO, how, sizeof how, tail, sizeof tail);
  b->rcs[ji] = kevo_fail(&b->errs[ji], KEVO_E_WORKER,
                         "the Triton compile server %s while compiling '%s' (a fresh one is "
                         "starting)%s%s",
                         how, j->o->kernel, tail[0] ? ": " : "", tail);
  batch_done(b, ji);
}

/* Waits for a hello, a reply or a deadline, and takes what came. KEVO_E_IO when poll fails. */
static int batch_wait(batch *b) {
  triton_pool *p = b->p;
  struct pollfd pfd[MAX_SERVERS];
  int who[MAX_SERVERS], np = 0;
  double now = now_s(), wait = 3600;
  for (int si = 0; si < p->nmax; si++) {
    server *s = &p->srv[si];
    if (s->state != SRV_STARTING && s->state != SRV_BUSY) continue;
    pfd[np] = (struct pollfd){.fd = s->proc.from_fd, .events = POLLIN};
    who[np++] = si;
    if (s->deadline - now < wait) wait = s->deadline - now;
  }
  for (size_t i = 0; i < b->n; i++) /* a job waiting for a server waits no longer than this */
    if (b->jobs[i].pending && b->jobs[i].o->deadline_s > 0 && b->jobs[i].o->deadline_s - now < wait)
      wait = b->jobs[i].o->deadline_s - now;
  int pr = poll(pfd, (nfds_t)np, wait > 0 ? (int)(wait * 1000) + 1 : 0);
  if (pr < 0 && errno != EINTR)
    return kevo_fail(&b->start_err, KEVO_E_IO, "poll: %s", strerror(errno));
  for (int k = 0; pr > 0 && k < np; k++)
    if (pfd[k].revents) batch_read(b, who[k]);
  return KEVO_OK;
}

/* Kills servers past their deadline: a start that never said hello, a compile too long. */
static void batch_deadlines(batch *b) {
  triton_pool *p = b->p;
  double now = now_s();
  for (int si = 0; si < p->nmax; si++) {
    server *s = &p->srv[si];
    if (s->state == SRV_STARTING && now > s->deadline) {
      server_hello(p, si, &b->start_err); /* reads nothing, kills, says why */
      b->start_failures++;
    } else if (s->state == SRV_BUSY && now > s->deadline) {
      size_t ji = (size_t)s->job;
      const triton_compile_opts *o = b->jobs[ji].o;
      char how[96], tail[16];
      server_replace(p, si, 1, how, sizeof how, tail, sizeof tail);
      b->rcs[ji] = kevo_fail(&b->errs[ji], KEVO_E_TIMEOUT,
                             "compiling '%s' took longer than %.1f s: the server was killed (a "
                             "fresh one is starting)",
                             o->kernel, o->timeout_s > 0 ? o->timeout_s : p->o.timeout_s);
      batch_done(b, ji);
    }
  }
}

void triton_compile_many(triton_pool *p, const triton_compile_opts *opts, size_t n,
                         triton_module **out, int *rcs, kevo_error *errs) {
  kevo_error e0;
  for (size_t i = 0; i < n; i++) {
    out[i] = NULL;
    rcs[i] = KEVO_OK;
    kevo_error_clear(&errs[i]);
  }
  int rc = KEVO_OK, all_refused = n > 0;
  for (size_t i = 0; i < n; i++) { /* sources refused as text need no server */
    kevo_error ignored;
    all_refused = all_refused && opts[i].source && opts[i].kernel &&
                  source_refused(&opts[i], &ignored) != KEVO_OK;
  }
  if (!all_refused) rc = triton_pool_ready(p, NULL, 0, &e0);
  job *jobs = rc ? NULL : calloc(n ? n : 1, sizeof *jobs);
  if (!rc && !jobs) rc = kevo_fail(&e0, KEVO_E_NOMEM, "out of memory");
  if (rc) {
    for (size_t i = 0; i < n; i++) {
      rcs[i] = rc;
      errs[i] = e0;
    }
    return;
  }
  batch b = {.p = p,
             .n = n,
             .jobs = jobs,
             .out = out,
             .rcs = rcs,
             .errs = errs,
             .start_err = {KEVO_E_UNSUPPORTED, "no Triton compile server could start"}};
  batch_prepare(&b, opts);
  while (b.left) {
    batch_expire(&b);
    if (!b.left) break;
    batch_dispatch(&b);
    if (!batch_start_servers(&b)) {
      for (size_t i = 0; i < n; i++)
        if (jobs[i].pending) {
          rcs[i] = b.start_err.status;
          errs[i] = b.start_err;
          batch_done(&b, i);
        }
      break;
    }
    if (batch_wait(&b)) break;
    batch_deadlines(&b);
  }
  for (size_t i = 0; i < n; i++)
    cJSON_Delete(jobs[i].req);
  free(jobs);
}

int triton_compile(triton_pool *p, const triton_compile_opts *opts, triton_module **out,
                   kevo_error *err) {
  int rc;
  triton_compile_many(p, opts, 1, out, &rc, err);
  return rc;
}

int triton_pool_selftest(triton_pool *p, const char *write_path, cJSON **reply, kevo_error *err) {
  *reply = NULL;
  int rc = triton_pool_ready(p, NULL, 0, err);
  if (rc) return rc;
  int si = 0;
  while (si < p->nmax && p->srv[si].state != SRV_IDLE)
    si++;
  if (si == p->nmax) return kevo_fail(err, KEVO_E_WORKER, "no idle compile server");
  server *s = &p->srv[si];
  cJSON *h = cJSON_CreateObject();
  cJSON_AddStringToObject(h, "op", "selftest");
  cJSON_AddNumberToObject(h, "id", (double)p->next_id++);
  if (write_path) cJSON_AddStringToObject(h, "write", write_path);
  rc = kevo_frame_write(s->proc.to_fd, h, NULL, 0, err);
  cJSON_Delete(h);
  kevo_frame f = {0};
  if (!rc) rc = kevo_frame_read(s->proc.from_fd, &f, 30000, err);
  if (rc) {
    char how[96], tail[600];
    server_replace(p, si, 1, how, sizeof how, tail, sizeof tail);
    return kevo_fail(err, KEVO_E_WORKER, "the compile server %s during a self-test: %s", how, tail);
  }
  *reply = f.header;
  f.header = NULL;
  kevo_frame_free(&f);
  return KEVO_OK;
}

void triton_module_free(triton_module *m) {
  if (!m) return;
  free(m->cubin);
  cJSON_Delete(m->info);
  for (size_t i = 0; i < m->ndiags; i++)
    free(m->diags[i].message);
  free(m->diags);
  free(m);
}
