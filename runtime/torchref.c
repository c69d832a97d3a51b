/* torchref.c: starting the PyTorch bridge, describe and serve sessions, and filling the
 * worker's reference cache with the bridge's outputs (torchref.h). */
#include "torchref.h"

#include "buf.h"
#include "resources.h"
#include "sha256.h"

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
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BRIDGE_RESOURCE "python/kb_bridge.py"
#define DESCRIBE_CAP ((size_t)16 << 20)
#define CALL_TIMEOUT_S 600.0

struct torchref {
  pid_t pid;
  int to_fd, from_fd;
  char dir[PATH_MAX], log[PATH_MAX + 16];
  const char *python_from; /* which setting chose the interpreter (python_setting) */
  int dead;
  int no_ipc; /* tensors cross as blobs: CUDA IPC failed once (or KEVO_TORCH_IPC=0) */
  char ipc_why[512];
};

static int is_exec(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The interpreter's name and which setting gave it: --python, $KEVO_PYTHON (the one variable
 * for kevo's python, Triton's too), $KEVO_TORCH_PYTHON (its older name for the bridge, still
 * read when $KEVO_PYTHON is unset), else python3 on PATH. */
static const char *python_setting(const char *given, const char **from) {
  const char *e;
  if (given && *given) return *from = "--python", given;
  if ((e = getenv("KEVO_PYTHON")) && *e) return *from = "$KEVO_PYTHON", e;
  if ((e = getenv("KEVO_TORCH_PYTHON")) && *e)
    return *from = "$KEVO_TORCH_PYTHON (the older name of $KEVO_PYTHON)", e;
  return *from = "python3 on PATH", "python3";
}

int torchref_find_python(const char *given, char *out, size_t n, kevo_error *err) {
  const char *from;
  const char *name = python_setting(given, &from);
  if (strchr(name, '/')) {
    if (!is_exec(name))
      return kevo_fail(err, KEVO_E_UNSUPPORTED,
                       "python '%s' (from %s) is not an executable file: set KEVO_PYTHON to a "
                       "python3 that can import torch",
                       name, from);
    snprintf(out, n, "%s", name);
    return KEVO_OK;
  }
  const char *path = getenv("PATH");
  for (const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin"; p && *p;) {
    const char *colon = strchr(p, ':');
    size_t dl = colon ? (size_t)(colon - p) : strlen(p);
    char cand[PATH_MAX];
    snprintf(cand, sizeof cand, "%.*s/%s", (int)dl, p, name);
    if (dl && is_exec(cand)) {
      snprintf(out, n, "%s", cand);
      return KEVO_OK;
    }
    p = colon ? colon + 1 : NULL;
  }
  return kevo_fail(err, KEVO_E_UNSUPPORTED,
                   "no %s (from %s) for the PyTorch reference: set KEVO_PYTHON to a python3 "
                   "that can import torch, or pass --python",
                   name, from);
}

/* Variables the bridge may see: what python, torch and CUDA need, nothing that looks secret. */
static int env_allowed(const char *kv) {
  static const char *const exact[] = {"PATH",
                                      "HOME",
                                      "LANG",
                                      "LC_ALL",
                                      "TMPDIR",
                                      "USER",
                                      "LD_LIBRARY_PATH",
                                      "PYTHONPATH",
                                      "CUDA_VISIBLE_DEVICES",
                                      "CUDA_HOME",
                                      "XDG_CACHE_HOME",
                                      NULL};
  static const char *const prefix[] = {"TORCH", "TRITON_", "CUDA_", "NVIDIA_", "OMP_", NULL};
  size_t n = strcspn(kv, "=");
  char name[256];
  if (n >= sizeof name) return 0;
  memcpy(name, kv, n);
  name[n] = 0;
  if (strstr(name, "KEY") || strstr(name, "TOKEN") || strstr(name, "SECRET") ||
      strstr(name, "PASSWORD"))
    return 0;
  for (int i = 0; exact[i]; i++)
    if (!strcmp(name, exact[i])) return 1;
  for (int i = 0; prefix[i]; i++)
    if (!strncmp(name, prefix[i], strlen(prefix[i]))) return 1;
  return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  remove(path);
  return 0;
}

/* The tail of the bridge's log (its stderr), one line, for error messages. */
static void log_tail(const torchref *t, char *out, size_t n) {
  out[0] = 0;
  FILE *f = fopen(t->log, "rb");
  if (!f) return;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  long from = size > 600 ? size - 600 : 0;
  fseek(f, from, SEEK_SET);
  size_t got = fread(out, 1, n - 1, f);
  fclose(f);
  out[got] = 0;
  while (got && (out[got - 1] == '\n' || out[got - 1] == ' '))
    out[--got] = 0;
  for (char *p = out; *p; p++)
    if (*p == '\n') *p = ' ';
}

static void reap(torchref *t) {
  if (t->to_fd >= 0) close(t->to_fd);
  if (t->from_fd >= 0) close(t->from_fd);
  t->to_fd = t->from_fd = -1;
  if (t->pid > 0) {
    kill(t->pid, SIGKILL);
    while (waitpid(t->pid, NULL, 0) < 0 && errno == EINTR) {
    }
  }
  t->pid = 0;
  t->dead = 1;
}

static void free_handle(torchref *t) {
  if (!t) return;
  reap(t);
  if (t->dir[0]) nftw(t->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  free(t);
}

/* Writes the bridge into a fresh directory and starts `python bridge MODE PROBLEM` there with
 * stdin and stdout on pipes and stderr into the directory's log. */
static int spawn(const char *mode, const char *problem, const torchref_opts *o, torchref **out,
                 kevo_error *err) {
  *out = NULL;
  char python[PATH_MAX], script[PATH_MAX + 32], abs_problem[PATH_MAX];
  int rc = torchref_find_python(o ? o->python : NULL, python, sizeof python, err);
  if (rc) return rc;
  if (!realpath(problem, abs_problem))
    return kevo_fail(err, KEVO_E_RECIPE, "%s: %s", problem, strerror(errno));
  const struct kevo_resource *res = kevo_resource_find(BRIDGE_RESOURCE);
  if (!res) return kevo_fail(err, KEVO_E_INTERNAL, "%s is not embedded", BRIDGE_RESOURCE);
  torchref *t = calloc(1, sizeof *t);
  if (!t) return kevo_fail(err, KEVO_E_NOMEM, "out of memory");
  t->to_fd = t->from_fd = -1;
  python_setting(o ? o->python : NULL, &t->python_from);
  const char *tmp = getenv("TMPDIR");
  snprintf(t->dir, sizeof t->dir, "%s/kevo-torch-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(t->dir)) {
    rc = kevo_fail(err, KEVO_E_IO, "mkdtemp %s: %s", t->dir, strerror(errno));
    t->dir[0] = 0;
    goto fail;
  }
  snprintf(script, sizeof script, "%s/kb_bridge.py", t->dir);
  snprintf(t->log, sizeof t->log, "%s/bridge.log", t->dir);
  FILE *f = fopen(script, "wb");
  if (!f || fwrite(res->data, 1, res->size, f) != res->size || fclose(f)) {
    if (f) fclose(f);
    rc = kevo_fail(err, KEVO_E_IO, "writing %s: %s", script, strerror(errno));
    goto fail;
  }
  int in[2] = {-1, -1}, outp[2] = {-1, -1};
  if (pipe2(in, O_CLOEXEC) || pipe2(outp, O_CLOEXEC)) {
    rc = kevo_fail(err, KEVO_E_IO, "pipe: %s", strerror(errno));
    goto fail_pipes;
  }
  int logfd = open(t->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (logfd < 0) {
    rc = kevo_fail(err, KEVO_E_IO, "%s: %s", t->log, strerror(errno));
    goto fail_pipes;
  }
  extern char **environ;
  char *envp[128];
  char gpu_entry[100];
  int ne = 0;
  if (o && o->gpu) { /* the bridge runs on its worker's GPU (kevo run --gpus) */
    snprintf(gpu_entry, sizeof gpu_entry, "CUDA_VISIBLE_DEVICES=%s", o->gpu);
    envp[ne++] = gpu_entry;
  }
  for (char **e = environ; *e && ne < 127; e++)
    if (env_allowed(*e) && !(o && o->gpu && !strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21)))
      envp[ne++] = *e;
  envp[ne] = NULL;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(in[0], 0);
    dup2(outp[1], 1);
    dup2(logfd, 2);
    if (chdir(t->dir)) _exit(127);
    char *argv[] = {python, script, (char *)mode, abs_problem, NULL};
    execve(python, argv, envp);
    dprintf(2, "kevo: cannot run %s: %s\n", python, strerror(errno));
    _exit(127);
  }
  close(logfd);
  close(in[0]);
  close(outp[1]);
  if (pid < 0) {
    close(in[1]);
    close(outp[0]);
    rc = kevo_fail(err, KEVO_E_IO, "fork: %s", strerror(errno));
    goto fail;
  }
  struct sigaction sa;
  if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
  t->pid = pid;
  t->to_fd = in[1];
  t->from_fd = outp[0];
  *out = t;
  return KEVO_OK;
fail_pipes:
  for (int i = 0; i < 2; i++) {
    if (in[i] >= 0) close(in[i]);
    if (outp[i] >= 0) close(outp[i]);
  }
fail:
  free_handle(t);
  return rc;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A bridge that exited or failed: its exit status and log say why. */
static int bridge_failed(torchref *t, int status, const char *what, kevo_error *err) {
  char tail[640];
  log_tail(t, tail, sizeof tail);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  /* exit 2: the problem file is at fault; 3: no torch; else the bridge broke */
  int st = code == 2 ? KEVO_E_RECIPE : code == 3 || code == 127 ? KEVO_E_UNSUPPORTED : KEVO_E_IO;
  const char *msg = strstr(tail, "E_PROBLEM: ");
  if (msg)
    msg += strlen("E_PROBLEM: ");
  else if ((msg = strstr(tail, "E_UNSUPPORTED: ")))
    msg += strlen("E_UNSUPPORTED: ");
  if (code == 3)
    return kevo_fail(err, st,
                     "%s: %s; the python came from %s: set KEVO_PYTHON to a python3 that can "
                     "import torch (kevo's Triton reads the same variable), or pass --python",
                     what, msg ? msg : tail, t->python_from);
  if (msg || tail[0]) return kevo_fail(err, st, "%s: %s", what, msg ? msg : tail);
  return kevo_fail(err, st, "%s: the bridge %s %d and said nothing", what,
                   WIFEXITED(status) ? "exited with status" : "was killed by signal",
                   WIFEXITED(status)     ? code
                   : WIFSIGNALED(status) ? WTERMSIG(status)
                                         : -1);
}

int torchref_describe(const char *problem, const torchref_opts *o, char **json, kevo_error *err) {
  *json = NULL;
  torchref *t;
  int rc = spawn("describe", problem, o, &t, err);
  if (rc) return rc;
  close(t->to_fd);
  t->to_fd = -1;
  double limit = o && o->start_timeout_s > 0 ? o->start_timeout_s : 300;
  double deadline = now_s() + limit;
  kevo_buf b;
  kevo_buf_init(&b, DESCRIBE_CAP);
  char chunk[65536];
  for (;;) {
    double left = deadline - now_s();
    if (left <= 0) {
      rc = kevo_fail(err, KEVO_E_TIMEOUT, "describing %s took over %.0f s", problem, limit);
      goto out;
    }
    struct pollfd p = {.fd = t->from_fd, .events = POLLIN};
    int pr = poll(&p, 1, left > 1000 ? 1000 : (int)(left * 1000) + 1);
    if (pr < 0 && errno != EINTR) {
      rc = kevo_fail(err, KEVO_E_IO, "poll: %s", strerror(errno));
      goto out;
    }
    if (pr <= 0) continue;
    ssize_t n = read(t->from_fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      rc = kevo_fail(err, KEVO_E_IO, "reading the bridge: %s", strerror(errno));
      goto out;
    }
    if (n == 0) break;
    if ((rc = kevo_buf_append(&b, chunk, (size_t)n))) {
      kevo_fail(err, rc, "the description of %s is over %zu bytes", problem, DESCRIBE_CAP);
      goto out;
    }
  }
  int status = 0;
  while (waitpid(t->pid, &status, 0) < 0 && errno == EINTR) {
  }
  t->pid = 0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || b.len == 0) {
    rc = bridge_failed(t, status, problem, err);
    goto out;
  }
  *json = kevo_buf_steal(&b, NULL);
out:
  kevo_buf_free(&b);
  free_handle(t);
  return rc;
}

int torchref_open(const char *problem, const torchref_opts *o, torchref **out, kevo_error *err) {
  int rc = spawn("serve", problem, o, out, err);
  if (rc) return rc;
  cJSON *hello = cJSON_CreateObject();
  cJSON_AddStringToObject(hello, "op", "hello");
  kevo_frame reply;
  double limit = o && o->start_timeout_s > 0 ? o->start_timeout_s : 300;
  rc = torchref_call(*out, hello, NULL, 0, limit, &reply, err);
  cJSON_Delete(hello);
  if (rc) {
    torchref_close(*out);
    *out = NULL;
    return rc;
  }
  kevo_frame_free(&reply);
  return KEVO_OK;
}

void torchref_close(torchref *t) {
  if (!t) return;
  if (!t->dead && t->to_fd >= 0) {
    cJSON *bye = cJSON_CreateObject();
    cJSON_AddStringToObject(bye, "op", "bye");
    kevo_error e;
    kevo_frame r;
    if (kevo_frame_write(t->to_fd, bye, NULL, 0, &e) == KEVO_OK &&
        kevo_frame_read(t->from_fd, &r, 2000, &e) == KEVO_OK)
      kevo_frame_free(&r);
    cJSON_Delete(bye);
  }
  free_handle(t);
}

int torchref_call(torchref *t, cJSON *req, const kevo_blob *blobs, size_t nblobs, double timeout_s,
                  kevo_frame *reply, kevo_error *err) {
  memset(reply, 0, sizeof *reply);
  if (t->dead) return kevo_fail(err, KEVO_E_IO, "the PyTorch bridge is gone");
  static _Atomic int next_id = 1; /* bridges of several GPUs are called from their threads */
  cJSON_DeleteItemFromObject(req, "id");
  int id = next_id++;
  cJSON_AddNumberToObject(req, "id", id);
  int rc = kevo_frame_write(t->to_fd, req, blobs, nblobs, err);
  if (!rc)
    rc = kevo_frame_read(t->from_fd, reply,
                         (int)((timeout_s > 0 ? timeout_s : CALL_TIMEOUT_S) * 1000), err);
  if (rc) {
    int timed_out = rc == KEVO_E_TIMEOUT, status = 0;
    if (timed_out && t->pid > 0) kill(t->pid, SIGKILL);
    if (t->pid > 0) {
      while (waitpid(t->pid, &status, 0) < 0 && errno == EINTR) {
      }
      t->pid = 0;
    }
    if (timed_out) {
      reap(t);
      return kevo_fail(err, KEVO_E_TIMEOUT, "the PyTorch bridge did not answer in %.0f s",
                       timeout_s);
    }
    rc = bridge_failed(t, status, "the PyTorch bridge died", err);
    reap(t);
    return rc;
  }
  const cJSON *rid = cJSON_GetObjectItemCaseSensitive(reply->header, "id");
  if (!cJSON_IsNumber(rid) || rid->valueint != id) {
    kevo_frame_free(reply);
    reap(t);
    return kevo_fail(err, KEVO_E_IO, "the PyTorch bridge answered another request");
  }
  if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply->header, "ok"))) {
    const char *e = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply->header, "error"));
    rc = kevo_fail(err, KEVO_E_RECIPE, "the PyTorch reference failed: %s", e ? e : "no reason");
    kevo_frame_free(reply);
    return rc;
  }
  return KEVO_OK;
}

/* ---- with the worker ---------------------------------------------------------------------- */

/* A request of kind `op` for (shape, trial) of eval_req: the same tensors, shapes and seed,
 * so the worker derives the same inputs and the same cache key as when it evaluates. */
static cJSON *worker_req(const cJSON *eval_req, const char *op, int shape, int trial) {
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "op", op);
  static const char *const keep[] = {"tensors", "shapes", "verify"};
  for (int i = 0; i < 3; i++)
    cJSON_AddItemToObject(r, keep[i],
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(eval_req, keep[i]), 1));
  cJSON_AddNumberToObject(r, "shape", shape);
  cJSON_AddNumberToObject(r, "trial", trial);
  return r;
}

/* The bridge's tensor list for shape `shape`: every input of eval_req with dtype and dims. */
static cJSON *bridge_tensors(const cJSON *eval_req, int shape) {
  cJSON *out = cJSON_CreateArray();
  const cJSON *dims = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(eval_req, "shapes"), shape), "dims");
  const cJSON *t;
  cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(eval_req, "tensors")) {
    const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "role"));
    if (!role || strcmp(role, "input")) continue;
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name"));
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name ? name : "?");
    cJSON_AddItemToObject(o, "dtype",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(t, "dtype"), 1));
    const cJSON *d = name ? cJSON_GetObjectItemCaseSensitive(dims, name) : NULL;
    cJSON_AddItemToObject(o, "shape", d ? cJSON_Duplicate(d, 1) : cJSON_CreateArray());
    cJSON_AddItemToArray(out, o);
  }
  return out;
}

/* The worker's inputs for (shape, trial): *inputs holds the frame with one blob per input,
 * or with ipc, no blob and "ipc": [{name, handle, bytes}] (the worker lends them until its
 * next request). */
static int trial_inputs(torchref_worker_fn fn, void *ctx, const cJSON *eval_req, int shape,
                        int trial, int ipc, kevo_frame *inputs, kevo_error *err) {
  cJSON *req = worker_req(eval_req, "inputs", shape, trial);
  if (ipc) cJSON_AddStringToObject(req, "share", "ipc");
  int rc = fn(ctx, req, NULL, 0, inputs, err);
  cJSON_Delete(req);
  if (rc) return kevo_fail_prefix(err, "the worker's inputs (shape %d, trial %d): ", shape, trial);
  if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(inputs->header, "ok"))) {
    const char *e = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(inputs->header, "error"));
    const char *v =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(inputs->header, "message"));
    rc = kevo_fail(err,
                   strstr(e ? e : "", "E_NOGPU") ? KEVO_E_NOGPU
                   : strstr(e ? e : "", "E_IPC") ? KEVO_E_UNSUPPORTED
                                                 : KEVO_E_WORKER,
                   "the worker's inputs: %s",
                   e   ? e
                   : v ? v
                       : "no reason");
    kevo_frame_free(inputs);
  }
  return rc;
}

/* Whether tensors may cross by CUDA IPC with this bridge (not after a failure; never with
 * KEVO_TORCH_IPC=0). */
static int use_ipc(torchref *t) {
  const char *env = getenv("KEVO_TORCH_IPC");
  return !t->no_ipc && !(env && !strcmp(env, "0"));
}

/* IPC failed: tensors go as blobs from now on (the reason kept for the log). */
static void drop_ipc(torchref *t, const kevo_error *why) {
  t->no_ipc = 1;
  snprintf(t->ipc_why, sizeof t->ipc_why, "%s", why->msg);
}

/* A bridge request of kind op with shape's tensors, the inputs as the worker gave them (blobs
 * or IPC handles). */
static cJSON *bridge_req(const char *op, const cJSON *eval_req, int shape, const kevo_frame *in) {
  cJSON *breq = cJSON_CreateObject();
  cJSON_AddStringToObject(breq, "op", op);
  cJSON_AddItemToObject(breq, "tensors", bridge_tensors(eval_req, shape));
  const cJSON *ipc = cJSON_GetObjectItemCaseSensitive(in->header, "ipc");
  if (ipc) cJSON_AddItemToObject(breq, "ipc", cJSON_Duplicate(ipc, 1));
  return breq;
}

/* One (shape, trial): the worker's inputs, the bridge's reference outputs, the worker's
 * put_reference. hex: a digest of the outputs (for the degeneracy check). With IPC the
 * outputs stay on the device in the bridge, which keeps them under "label/trial"; a failure of
 * IPC itself (KEVO_E_UNSUPPORTED from either side) is returned for the caller to retry with
 * blobs. */
static int supply_one(torchref *t, torchref_worker_fn fn, void *ctx, const cJSON *eval_req,
                      int shape, int trial, int ipc, char hex[KEVO_HASH_HEX], kevo_error *err) {
  kevo_frame in, out, put;
  int rc = trial_inputs(fn, ctx, eval_req, shape, trial, ipc, &in, err);
  if (rc) return rc;
  cJSON *breq = bridge_req("reference", eval_req, shape, &in);
  if (ipc) {
    const char *label = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(in.header, "label"));
    char keep[400];
    snprintf(keep, sizeof keep, "%s/%d", label ? label : "?", trial);
    cJSON_AddStringToObject(breq, "keep", keep);
  }
  rc = torchref_call(t, breq, in.blobs, in.nblobs, 0, &out, err);
  cJSON_Delete(breq);
  kevo_frame_free(&in);
  if (rc) {
    if (ipc && strstr(err->msg, "E_IPC")) err->status = KEVO_E_UNSUPPORTED;
    return rc;
  }
  const char *digest = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(out.header, "digest"));
  if (digest) {
    snprintf(hex, KEVO_HASH_HEX, "%s", digest);
  } else { /* blobs: their hash */
    kevo_sha256 h;
    kevo_sha256_init(&h);
    for (size_t i = 0; i < out.nblobs; i++)
      kevo_sha256_update(&h, out.blobs[i].data, out.blobs[i].size);
    kevo_sha256_final_hex(&h, hex);
  }
  cJSON *preq = worker_req(eval_req, "put_reference", shape, trial);
  const cJSON *oipc = cJSON_GetObjectItemCaseSensitive(out.header, "ipc");
  if (ipc && oipc) cJSON_AddItemToObject(preq, "ipc", cJSON_Duplicate(oipc, 1));
  rc = fn(ctx, preq, ipc ? NULL : out.blobs, ipc ? 0 : out.nblobs, &put, err);
  cJSON_Delete(preq);
  kevo_frame_free(&out);
  if (rc) return kevo_fail_prefix(err, "storing the reference in the worker: ");
  if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(put.header, "ok"))) {
    const char *e = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(put.header, "error"));
    rc = kevo_fail(err, ipc && strstr(e ? e : "", "E_IPC") ? KEVO_E_UNSUPPORTED : KEVO_E_WORKER,
                   "the worker refused the reference: %s", e ? e : "no reason");
  }
  kevo_frame_free(&put);
  return rc;
}

int torchref_supply(torchref *t, torchref_worker_fn fn, void *ctx, const cJSON *eval_req,
                    const cJSON *missing, kevo_error *err) {
  enum { MAX_SHAPES = 64 };
  char first[MAX_SHAPES][KEVO_HASH_HEX];
  int same[MAX_SHAPES], count[MAX_SHAPES];
  memset(same, 0, sizeof same);
  memset(count, 0, sizeof count);
  const cJSON *m;
  cJSON_ArrayForEach(m, missing) {
    const cJSON *sj = cJSON_GetObjectItemCaseSensitive(m, "shape");
    const cJSON *tj = cJSON_GetObjectItemCaseSensitive(m, "trial");
    if (!cJSON_IsNumber(sj) || !cJSON_IsNumber(tj) || sj->valueint < 0 ||
        sj->valueint >= MAX_SHAPES || tj->valueint < 0)
      return kevo_fail(err, KEVO_E_WORKER, "the worker's list of missing references is malformed");
    int shape = sj->valueint, trial = tj->valueint;
    char hex[KEVO_HASH_HEX];
    int ipc = use_ipc(t);
    int rc = supply_one(t, fn, ctx, eval_req, shape, trial, ipc, hex, err);
    if (rc == KEVO_E_UNSUPPORTED && ipc && !t->dead) {
      drop_ipc(t, err);
      rc = supply_one(t, fn, ctx, eval_req, shape, trial, 0, hex, err);
    }
    if (rc) return rc;
    /* the outputs of every trial of a shape must not all be the same bytes */
    if (count[shape]++ == 0)
      memcpy(first[shape], hex, KEVO_HASH_HEX), same[shape] = 1;
    else if (strcmp(first[shape], hex))
      same[shape] = 0;
  }
  for (int s = 0; s < MAX_SHAPES; s++)
    if (count[s] > 1 && same[s])
      return kevo_fail(err, KEVO_E_RECIPE,
                       "degenerate reference: %d trials with different inputs give identical "
                       "outputs (shape %d), so any kernel that ignores its inputs would pass",
                       count[s], s);
  return KEVO_OK;
}

/* The baseline request with the benchmark trial's inputs (ipc: lent by the worker). */
static int baseline_once(torchref *t, torchref_worker_fn fn, void *ctx, const cJSON *eval_req,
                         int last, int ipc, kevo_frame *reply, kevo_error *err) {
  kevo_frame in;
  int rc = trial_inputs(fn, ctx, eval_req, 0, last, ipc, &in, err);
  if (rc) return rc;
  cJSON *breq = bridge_req("baseline", eval_req, 0, &in);
  const cJSON *bench = cJSON_GetObjectItemCaseSensitive(eval_req, "bench");
  if (bench) cJSON_AddItemToObject(breq, "bench", cJSON_Duplicate(bench, 1));
  rc = torchref_call(t, breq, in.blobs, in.nblobs, 0, reply, err);
  cJSON_Delete(breq);
  kevo_frame_free(&in);
  if (rc && ipc && strstr(err->msg, "E_IPC")) err->status = KEVO_E_UNSUPPORTED;
  return rc;
}

int torchref_baseline(torchref *t, torchref_worker_fn fn, void *ctx, const cJSON *eval_req,
                      cJSON **out, kevo_error *err) {
  *out = NULL;
  const cJSON *trials = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(eval_req, "verify"), "trials");
  int last = cJSON_IsNumber(trials) && trials->valueint > 5 ? trials->valueint - 1 : 4;
  kevo_frame reply;
  int ipc = use_ipc(t);
  int rc = baseline_once(t, fn, ctx, eval_req, last, ipc, &reply, err);
  if (rc == KEVO_E_UNSUPPORTED && ipc && !t->dead) {
    drop_ipc(t, err);
    rc = baseline_once(t, fn, ctx, eval_req, last, 0, &reply, err);
  }
  if (rc) return rc;
  cJSON_DeleteItemFromObject(reply.header, "id");
  cJSON_DeleteItemFromObject(reply.header, "blobs");
  cJSON_DeleteItemFromObject(reply.header, "ok");
  /* how tensors crossed: through CUDA IPC, or the pipes (and why IPC was given up) */
  cJSON_AddStringToObject(reply.header, "tensors_via", t->no_ipc ? "pipes" : "ipc");
  if (t->no_ipc && t->ipc_why[0]) cJSON_AddStringToObject(reply.header, "ipc_error", t->ipc_why);
  *out = reply.header;
  reply.header = NULL;
  kevo_frame_free(&reply);
  return KEVO_OK;
}

void torchref_make_external(cJSON *req, const char *key) {
  cJSON *mods = cJSON_GetObjectItemCaseSensitive(req, "modules");
  for (int i = cJSON_GetArraySize(mods) - 1; i >= 0; i--) {
    const char *role =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(mods, i), "role"));
    if (!role || strcmp(role, "candidate")) cJSON_DeleteItemFromArray(mods, i);
  }
  cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(req, "shapes")) {
    cJSON_DeleteItemFromObject(s, "reference");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(s, "reference"), "external", key);
  }
}

static double field_of(const cJSON *o, const char *k, const char *field) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, k), field);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

void torchref_add_baseline(cJSON *bench, const cJSON *baseline) {
  if (!cJSON_IsObject(bench)) return;
  const cJSON *med = cJSON_GetObjectItemCaseSensitive(bench, "median_ms");
  double m = cJSON_IsNumber(med) ? med->valuedouble : 0;
  double eager = field_of(baseline, "eager", "median_ms");
  double comp = field_of(baseline, "compiled", "median_ms");
  const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(baseline, "error"));
  if (why || eager <= 0) {
    cJSON_AddStringToObject(bench, "baseline_error", why ? why : "no eager time");
    return;
  }
  cJSON_AddNumberToObject(bench, "eager_ms", eager);
  cJSON_AddNumberToObject(bench, "ref_median_ms", eager);
  /* the baselines are GPU times; what Python spends issuing one call is kept beside them */
  double host = field_of(baseline, "eager", "host_ms");
  if (host > 0) cJSON_AddNumberToObject(bench, "eager_host_ms", host);
  host = field_of(baseline, "compiled", "host_ms");
  if (host > 0) cJSON_AddNumberToObject(bench, "compiled_host_ms", host);
  if (m > 0) cJSON_AddNumberToObject(bench, "speedup", eager / m);
  if (comp > 0) {
    cJSON_AddNumberToObject(bench, "compiled_ms", comp);
    if (m > 0) cJSON_AddNumberToObject(bench, "speedup_compiled", comp / m);
  }
  const cJSON *cs = cJSON_GetObjectItemCaseSensitive(baseline, "compile_s");
  if (cJSON_IsNumber(cs)) cJSON_AddNumberToObject(bench, "compile_s", cs->valuedouble);
  const char *ce =
      cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(baseline, "compile_error"));
  if (ce) cJSON_AddStringToObject(bench, "compile_error", ce);
  const char *via = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(baseline, "tensors_via"));
  if (via) cJSON_AddStringToObject(bench, "tensors_via", via);
  const char *ie = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(baseline, "ipc_error"));
  if (ie) cJSON_AddStringToObject(bench, "ipc_error", ie);
}
