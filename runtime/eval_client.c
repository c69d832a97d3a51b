#include "eval_client.h"

#include "buf.h"

#include <cjson/cJSON.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum { ENV_MAX = 256, REAP_GRACE_MS = 1000 };

struct evalclient {
  char *worker_cmd; /* NULL: this executable's `worker` command */
  char *gpu;
  double hello_timeout_s;
  pid_t pid;
  int to_fd, from_fd; /* the worker's stdin, stdout */
  cJSON *device;      /* from hello */
  int nogpu;
  char nogpu_msg[1024];
  long long next_id;
  evalclient_stats stats;
};

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int evalclient_env_allowed(const char *entry) {
  size_t n = strcspn(entry, "=");
  char name[256];
  if (n == 0 || n >= sizeof name) return 0;
  memcpy(name, entry, n);
  name[n] = '\0';
  static const char *const exact[] = {
      "PATH", "HOME", "LANG", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", NULL};
  for (const char *const *e = exact; *e; e++)
    if (!strcmp(name, *e)) return 1;
  if (strncmp(name, "KEVO_", 5) != 0) return 0;
  for (char *p = name; *p; p++)
    *p = (char)toupper((unsigned char)*p);
  static const char *const secret[] = {"KEY",  "TOKEN",  "SECRET",  "PASSW", "CREDENTIAL",
                                       "AUTH", "COOKIE", "SESSION", NULL};
  for (const char *const *s = secret; *s; s++)
    if (strstr(name, *s)) return 0;
  return 1;
}

int evalclient_new(const evalclient_opts *opts, evalclient **out, kevo_error *err) {
  *out = NULL;
  evalclient *c = calloc(1, sizeof *c);
  if (!c) return kevo_fail(err, KEVO_E_NOMEM, "no memory for an evaluator client");
  c->to_fd = c->from_fd = -1;
  const char *cmd = opts && opts->worker_cmd ? opts->worker_cmd : getenv("KEVO_WORKER");
  if (cmd && *cmd) c->worker_cmd = strdup(cmd);
  if (opts && opts->gpu) c->gpu = strdup(opts->gpu);
  c->hello_timeout_s = opts && opts->hello_timeout_s > 0 ? opts->hello_timeout_s : 120;
  if ((cmd && *cmd && !c->worker_cmd) || (opts && opts->gpu && !c->gpu)) {
    evalclient_free(c);
    return kevo_fail(err, KEVO_E_NOMEM, "no memory for an evaluator client");
  }
  *out = c;
  return KEVO_OK;
}

/* Describes how a worker ended, from a waitpid status. */
static void describe_exit(int status, char *out, size_t cap) {
  if (WIFSIGNALED(status))
    snprintf(out, cap, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else if (WIFEXITED(status))
    snprintf(out, cap, "exited with status %d", WEXITSTATUS(status));
  else
    snprintf(out, cap, "ended");
}

/* Closes the pipes, waits up to grace_ms for the worker to exit, then kills it; reaps it.
 * Writes how it ended into how. */
static void reap(evalclient *c, int grace_ms, char *how, size_t cap) {
  if (how && cap) how[0] = '\0';
  if (c->to_fd >= 0) close(c->to_fd);
  if (c->from_fd >= 0) close(c->from_fd);
  c->to_fd = c->from_fd = -1;
  if (c->pid <= 0) return;
  int status = 0;
  long long until = now_ms() + grace_ms;
  pid_t r;
  while ((r = waitpid(c->pid, &status, WNOHANG)) == 0 && now_ms() < until)
    usleep(2000);
  if (r == 0) {
    kill(c->pid, SIGKILL);
    c->stats.kills++;
    while ((r = waitpid(c->pid, &status, 0)) < 0 && errno == EINTR) {
    }
  }
  if (r == c->pid && how) describe_exit(status, how, cap);
  c->pid = 0;
  cJSON_Delete(c->device);
  c->device = NULL;
}

static void kill_worker(evalclient *c) {
  if (c->pid > 0) {
    kill(c->pid, SIGKILL);
    c->stats.kills++;
  }
  reap(c, 5000, NULL, 0);
}

/* A frame as proto.h defines it, written by the deadline (ms, monotonic; < 0 none). */
static int send_frame(evalclient *c, cJSON *header, const kevo_blob *blobs, size_t nblobs,
                      long long deadline, kevo_error *err) {
  long long left = deadline < 0 ? -1 : deadline - now_ms();
  int rc = kevo_frame_send(c->to_fd, header, blobs, nblobs,
                           deadline < 0 ? -1 : (left > 0 ? (int)left : 0), err);
  if (rc == KEVO_E_TIMEOUT) kevo_fail(err, rc, "the worker did not take the request in time");
  return rc;
}

/* Forks and execs the worker with a scrubbed environment. Everything the child uses is made
 * before fork: after it, only async-signal-safe calls. */
static int spawn(evalclient *c, kevo_error *err) {
  char *envp[ENV_MAX + 2];
  size_t ne = 0;
  char gpu_entry[300] = "";
  if (c->gpu) {
    snprintf(gpu_entry, sizeof gpu_entry, "CUDA_VISIBLE_DEVICES=%s", c->gpu);
    envp[ne++] = gpu_entry;
  }
  for (char **e = environ; e && *e && ne < ENV_MAX; e++) {
    if (!evalclient_env_allowed(*e)) continue;
    if (c->gpu && !strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21)) continue;
    envp[ne++] = *e;
  }
  envp[ne] = NULL;

  char self[4096];
  char *shell_cmd = NULL;
  char *argv[4];
  const char *path;
  if (c->worker_cmd) {
    size_t n = strlen(c->worker_cmd) + 6;
    shell_cmd = malloc(n);
    if (!shell_cmd) return kevo_fail(err, KEVO_E_NOMEM, "no memory to start the worker");
    snprintf(shell_cmd, n, "exec %s", c->worker_cmd);
    path = "/bin/sh";
    argv[0] = "sh", argv[1] = "-c", argv[2] = shell_cmd, argv[3] = NULL;
  } else {
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
      return kevo_fail(err, KEVO_E_WORKER, "cannot find kevo itself: %s", strerror(errno));
    self[n] = '\0';
    path = self;
    argv[0] = "kevo", argv[1] = "worker", argv[2] = NULL;
  }

  int in[2] = {-1, -1}, out[2] = {-1, -1};
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) {
    int e = errno;
    if (in[0] >= 0) close(in[0]), close(in[1]);
    free(shell_cmd);
    return kevo_fail(err, KEVO_E_WORKER, "cannot make pipes for the worker: %s", strerror(e));
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127); /* the driver died before prctl */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0) _exit(127);
    closefrom(3); /* fds the driver opened without O_CLOEXEC (the archive) stay with it */
    execve(path, argv, envp);
    _exit(127);
  }
  int e = errno;
  close(in[0]);
  close(out[1]);
  free(shell_cmd);
  if (pid < 0) {
    close(in[1]);
    close(out[0]);
    return kevo_fail(err, KEVO_E_WORKER, "cannot start the worker: %s", strerror(e));
  }
  fcntl(in[1], F_SETFL, fcntl(in[1], F_GETFL) | O_NONBLOCK);
  c->pid = pid;
  c->to_fd = in[1];
  c->from_fd = out[0];
  c->stats.spawns++;
  return KEVO_OK;
}

static const char *worker_name(const evalclient *c) {
  return c->worker_cmd ? c->worker_cmd : "kevo worker";
}

/* Starts a worker if none runs, and says hello to it. */
static int ensure_worker(evalclient *c, kevo_error *err) {
  if (c->nogpu) return kevo_fail(err, KEVO_E_NOGPU, "%s", c->nogpu_msg);
  if (c->pid > 0 && c->device) return KEVO_OK;
  if (c->pid > 0) kill_worker(c);
  int rc = spawn(c, err);
  if (rc) return rc;
  long long deadline = now_ms() + (long long)(c->hello_timeout_s * 1000);
  cJSON *hello = cJSON_CreateObject();
  cJSON_AddStringToObject(hello, "op", "hello");
  cJSON_AddNumberToObject(hello, "id", (double)++c->next_id);
  rc = send_frame(c, hello, NULL, 0, deadline, err);
  cJSON_Delete(hello);
  kevo_frame f = {0};
  if (!rc) {
    long long left = deadline - now_ms();
    rc = kevo_frame_read(c->from_fd, &f, left > 0 ? (int)left : 0, err);
  }
  if (rc) {
    char how[200] = "", why[512];
    snprintf(why, sizeof why, "%s", err ? err->msg : kevo_strerror(rc));
    if (rc == KEVO_E_TIMEOUT)
      kill_worker(c);
    else
      reap(c, REAP_GRACE_MS, how, sizeof how);
    return kevo_fail(err, KEVO_E_WORKER, "the worker (%s) did not answer hello: %s%s%s",
                     worker_name(c), why, *how ? "; it " : "", how);
  }
  cJSON *ok = cJSON_GetObjectItemCaseSensitive(f.header, "ok");
  cJSON *dev = cJSON_GetObjectItemCaseSensitive(f.header, "device");
  const char *error = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f.header, "error"));
  if (cJSON_IsTrue(ok) && cJSON_IsObject(dev)) {
    c->device = cJSON_DetachItemViaPointer(f.header, dev);
    kevo_frame_free(&f);
    return KEVO_OK;
  }
  if (error && !strncmp(error, "E_NOGPU", 7)) {
    const char *m = error + 7;
    while (*m == ':' || *m == ' ')
      m++;
    c->nogpu = 1;
    snprintf(c->nogpu_msg, sizeof c->nogpu_msg, "%s", *m ? m : "no GPU on this machine");
    rc = kevo_fail(err, KEVO_E_NOGPU, "%s", c->nogpu_msg);
  } else {
    rc = kevo_fail(err, KEVO_E_WORKER, "the worker (%s) refused hello: %s", worker_name(c),
                   error ? error : "no device in its reply");
  }
  kevo_frame_free(&f);
  reap(c, REAP_GRACE_MS, NULL, 0);
  return rc;
}

int evalclient_device(evalclient *c, const cJSON **device, kevo_error *err) {
  *device = NULL;
  int rc = ensure_worker(c, err);
  if (!rc) *device = c->device;
  return rc;
}

int evalclient_request(evalclient *c, cJSON *req, const kevo_blob *blobs, size_t nblobs,
                       double deadline_s, kevo_frame *reply, kevo_error *err) {
  memset(reply, 0, sizeof *reply);
  int rc = ensure_worker(c, err);
  if (rc) return rc;
  long long deadline = deadline_s > 0 ? now_ms() + (long long)(deadline_s * 1000) : -1;
  long long id = ++c->next_id;
  cJSON_DeleteItemFromObject(req, "id");
  cJSON_AddNumberToObject(req, "id", (double)id);
  rc = send_frame(c, req, blobs, nblobs, deadline, err);
  if (!rc) {
    long long left = deadline < 0 ? -1 : deadline - now_ms();
    rc = kevo_frame_read(c->from_fd, reply, deadline < 0 ? -1 : (left > 0 ? (int)left : 0), err);
  }
  char how[200] = "", why[512];
  snprintf(why, sizeof why, "%s", rc && err ? err->msg : kevo_strerror(rc));
  if (rc == KEVO_E_TIMEOUT) {
    kill_worker(c);
    return kevo_fail(err, KEVO_E_TIMEOUT, "no reply within %.3g s: the worker was killed",
                     deadline_s);
  }
  if (rc == KEVO_E_IO || rc == KEVO_E_WORKER) {
    c->stats.deaths++;
    reap(c, REAP_GRACE_MS, how, sizeof how);
    return kevo_fail(err, KEVO_E_WORKER, "the worker died before replying (%s)", *how ? how : why);
  }
  if (rc) {
    kill_worker(c);
    return kevo_fail(err, KEVO_E_WORKER, "the worker sent garbage: %s; it was killed", why);
  }
  cJSON *rid = cJSON_GetObjectItemCaseSensitive(reply->header, "id");
  if (!cJSON_IsNumber(rid) || (long long)rid->valuedouble != id) {
    kevo_frame_free(reply);
    kill_worker(c);
    return kevo_fail(err, KEVO_E_WORKER,
                     "the worker answered another request (id %s, want %lld); it was killed",
                     cJSON_IsNumber(rid) ? "mismatch" : "missing", id);
  }
  c->stats.requests++;
  const char *verdict =
      cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply->header, "verdict"));
  if (verdict && !strcmp(verdict, "crash")) { /* its context is gone: it exits, we replace it */
    c->stats.deaths++;
    reap(c, 2 * REAP_GRACE_MS, NULL, 0);
  }
  return KEVO_OK;
}

int evalclient_pid(const evalclient *c) {
  return c ? (int)c->pid : 0;
}

evalclient_stats evalclient_get_stats(const evalclient *c) {
  return c->stats;
}

void evalclient_free(evalclient *c) {
  if (!c) return;
  if (c->pid > 0) {
    cJSON *bye = cJSON_CreateObject();
    cJSON_AddStringToObject(bye, "op", "bye");
    cJSON_AddNumberToObject(bye, "id", (double)++c->next_id);
    kevo_error ignored;
    if (send_frame(c, bye, NULL, 0, now_ms() + 200, &ignored) == KEVO_OK) {
      kevo_frame f; /* take its answer, so it does not write into a closed pipe */
      if (kevo_frame_read(c->from_fd, &f, REAP_GRACE_MS, &ignored) == KEVO_OK) kevo_frame_free(&f);
    }
    cJSON_Delete(bye);
    char how[128];
    reap(c, REAP_GRACE_MS, how, sizeof how);
    /* a worker that dies on its way out (a crash in teardown) is a bug to see, not to swallow */
    if (how[0] && strcmp(how, "exited with status 0"))
      fprintf(stderr, "kevo: warning: the GPU worker %s after 'bye' (a worker bug)\n", how);
  }
  cJSON_Delete(c->device);
  free(c->worker_cmd);
  free(c->gpu);
  free(c);
}
