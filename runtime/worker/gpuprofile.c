/* gpuprofile.c: the profile stage (docs/profile.md). The worker does not profile in its own
 * process: it hands the request to a replay child (`kevo worker --profile-replay DIR`) run
 * under Nsight Compute, so the counters' set-up, kernel replay and the profiler's own failures
 * never touch the worker's context or a timed measurement. One ncu run serves a whole batch of
 * plans (the reference and several candidates): ncu's start-up is most of its cost.
 *
 * The child, step by step (kevo_gpu_profile_replay):
 *   1. read the request, open the device, load the modules;
 *   2. allocate the shape's tensors once and draw its inputs (trial 0), profiler off;
 *   3. resolve every plan; run each once, in order;
 *   4. write the manifest: how many kernels each plan launched, or why it did not.
 * The parent drops the child's own kernels (kv_*, launched before any plan's) from ncu's list
 * and matches the rest, in order, against the manifest. (Round A on the H200: with
 * --profile-from-start off and cuProfilerStart around the plans, ncu profiled no kernel; ncu
 * now profiles from the start.) */
#include "gpuprofile.h"
#include "gpudevice.h"
#include "gpueval_int.h"
#include "gpuncu.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
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

#define DRV (&e->g->drv)

enum { MAX_PLANS = 64, TEXT_CAP = 32 << 20, STANDBY_IDLE_S = 900 };

/* ---- the replay child ------------------------------------------------------------------- */

static void manifest_write(const char *dir, cJSON *m) {
  char path[4096];
  snprintf(path, sizeof path, "%s/manifest", dir);
  char *text = cJSON_PrintUnformatted(m);
  FILE *f = fopen(path, "w");
  if (f && text) fputs(text, f);
  if (f) fclose(f);
  free(text);
}

/* Records why a plan did not run and clears the evaluation's failure, so the next plan runs. */
static void plan_error(wk_eval *e, cJSON *entry) {
  cJSON_AddStringToObject(entry, "error", e->message[0] ? e->message : "failed");
  e->verdict = NULL;
  e->stage = NULL;
  e->message[0] = '\0';
}

/* Removes the profile folder and what the stage writes in it. */
static void rm_dir(const char *dir) {
  static const char *const files[] = {"request", "manifest", "ncu.csv", "ncu.out",
                                      "go",      "ready",    NULL};
  char path[4096];
  for (int i = 0; files[i]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    unlink(path);
  }
  rmdir(dir);
}

/* The child's timeline (docs/profile.md "Cost"): when each step ended, on CLOCK_MONOTONIC
 * (wk_now_ms, the same clock in every process of the host), written into the manifest as
 * "t": {"step": ms}; the worker turns them into ms since the request came. */
static void stamp(cJSON *t, const char *step) {
  cJSON_AddNumberToObject(t, step, wk_now_ms());
}

/* The cuts of docs/profile.md "Cost" (KEVO_PROFILE_WARMUP, KEVO_PROFILE_FAST_EXIT,
 * KEVO_PROFILE_EARLY_READ): on unless NAME is "0" in the environment (the child's is the
 * worker's, through ncu), so each can be measured without it. */
static int env_on(const char *name) {
  const char *v = getenv(name);
  return !v || strcmp(v, "0");
}

/* A standby's warm-up (KEVO_PROFILE_WARMUP): one tiny launch of the worker's own kv_rate, which
 * the standby's kernel filter profiles, so ncu sets up its profiling of this process (the metric
 * set's passes, its buffers) before the request comes. Its rows come first in the CSV, a kv_*
 * name that plans_reply skips. Failures are ignored: the request then pays the set-up. */
static void standby_warmup(kevo_gpu *g) {
  CUdeviceptr sink = 0;
  double flops;
  if (g->drv.cuMemAlloc(&sink, 256)) return;
  if (!devk_rate(&g->drv, &g->dk, g->stream, DK_RATE_F32_FMA, 1, 1, sink, &flops))
    g->drv.cuStreamSynchronize(g->stream);
  g->drv.cuMemFree(sink);
}

/* A standby child's wait (docs/profile.md "Cost"): its device is open under ncu; the worker's
 * go is a byte on DIR/go (a FIFO, opened before the device so the worker can write to it). Gives
 * up when the worker is gone or after STANDBY_IDLE_S. Returns 0 on the go, -1 else. */
static int standby_wait(int go, pid_t worker) {
  double t0 = wk_now_ms();
  while (go >= 0 && wk_now_ms() - t0 < STANDBY_IDLE_S * 1000.0) {
    struct pollfd p = {go, POLLIN, 0};
    int n = poll(&p, 1, 1000);
    char c;
    if (n > 0 && (p.revents & POLLIN) && read(go, &c, 1) == 1) return 0;
    if (n > 0 && !(p.revents & POLLIN)) return -1; /* the worker closed it without a go */
    if (kill(worker, 0) && errno == ESRCH) return -1;
  }
  return -1;
}

int kevo_gpu_profile_replay(const char *dir, int ordinal, pid_t standby_for) {
  char path[4096];
  snprintf(path, sizeof path, "%s/go", dir);
  int go = standby_for > 0 ? open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
  snprintf(path, sizeof path, "%s/request", dir);
  cJSON *man = cJSON_CreateObject();
  cJSON *plans_out = cJSON_AddArrayToObject(man, "plans");
  kevo_frame f = {0};
  kevo_error err = {0}, gerr = {0};
  kevo_gpu *g = NULL;
  wk_eval *e = calloc(1, sizeof *e);
  wk_shape *s = calloc(1, sizeof *s);
  wk_plan *plans = calloc(MAX_PLANS, sizeof *plans);
  int rc = 1, fd = -1;
  cJSON *t = cJSON_AddObjectToObject(man, "t");
  stamp(t, "start");
  int opened = !kevo_gpu_open(ordinal, 0, &g, &gerr); /* 1: no probes to time */
  stamp(t, "opened");
  if (opened && standby_for > 0 && env_on("KEVO_PROFILE_WARMUP")) {
    standby_warmup(g);
    stamp(t, "warm");
  }
  if (standby_for > 0) { /* set up: the worker may time kernels now (standby_settle) */
    snprintf(path, sizeof path, "%s/ready", dir);
    int r = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (r >= 0) close(r);
    snprintf(path, sizeof path, "%s/request", dir);
  }
  if (standby_for > 0 && standby_wait(go, standby_for)) {
    if (go >= 0) close(go);
    free(plans), free(s), free(e), cJSON_Delete(man);
    kevo_gpu_close(g);
    if (kill(standby_for, 0) && errno == ESRCH) rm_dir(dir); /* nobody else will */
    return 0; /* no request came: no manifest, nothing profiled */
  }
  if (go >= 0) close(go);
  stamp(t, "go");
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (!e || !s || !plans || fd < 0 || kevo_frame_read(fd, &f, -1, &err)) {
    cJSON_AddStringToObject(man, "error", err.msg[0] ? err.msg : "cannot read the request");
    goto out;
  }
  stamp(t, "request");
  if (!opened) {
    cJSON_AddStringToObject(man, "error", gerr.msg);
    cJSON_AddBoolToObject(man, "no_gpu", gerr.status == KEVO_E_NOGPU);
    goto out;
  }
  e->g = g;
  e->req = f.header;
  e->no_plans = 1;
  e->cur_stage = "profile";
  const cJSON *pl = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(f.header, "profile"), "plans");
  int n = cJSON_GetArraySize(pl);
  if (n < 1 || n > MAX_PLANS) {
    cJSON_AddStringToObject(man, "error", "request: profile.plans must be 1 to 64 plans");
    goto out;
  }
  int failed = wk_parse(e, f.blobs, f.nblobs); /* 2 */
  if (!failed) stamp(t, "modules");
  failed = failed || wk_shape_setup(e, s, 0, 1);
  if (!failed) stamp(t, "allocated");
  if (failed || wk_gen_inputs(e, s, 0, 0) || wk_plan_sync(e, 0, "drawing inputs")) {
    cJSON_AddStringToObject(man, "error", e->message);
    goto out;
  }
  stamp(t, "inputs");
  int ok[MAX_PLANS] = {0};
  const cJSON *x;
  int i = 0;
  cJSON_ArrayForEach(x, pl) { /* 3 */
    cJSON *entry = cJSON_CreateObject();
    cJSON_AddItemToArray(plans_out, entry);
    const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "role"));
    int cand = !role || strcmp(role, "reference");
    if (wk_plan_prepare(e, s, cJSON_GetObjectItemCaseSensitive(x, "plan"), &plans[i], cand))
      plan_error(e, entry);
    else
      ok[i] = 1;
    if (e->crashed) break;
    i++;
  }
  stamp(t, "prepared");
  cJSON *entry = plans_out->child;
  for (int k = 0; k < n && entry && !e->crashed; k++, entry = entry->next) {
    if (!ok[k]) continue;
    const char *role =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(pl, k), "role"));
    int cand = !role || strcmp(role, "reference");
    /* under ncu each launch returns once its kernel's replay passes are done */
    cJSON_AddNumberToObject(entry, "t0", wk_now_ms());
    if (wk_plan_run(e, &plans[k], cand, &s->set[0]) || wk_plan_sync(e, cand, "running the plan")) {
      plan_error(e, entry);
      continue;
    }
    cJSON_AddNumberToObject(entry, "t1", wk_now_ms());
    cJSON_AddNumberToObject(entry, "kernels", plans[k].nk);
  }
  rc = 0; /* 4 */
out:
  stamp(t, "done");
  manifest_write(dir, man);
  if (env_on("KEVO_PROFILE_FAST_EXIT")) { /* what ncu waits for is written: no teardown */
    fflush(NULL);
    _exit(rc);
  }
  cJSON_Delete(man);
  if (fd >= 0) close(fd);
  kevo_frame_free(&f);
  for (int k = 0; plans && k < MAX_PLANS; k++)
    wk_plan_release(&plans[k]);
  free(plans);
  free(s);
  free(e);
  /* the process ends here: the context, buffers and modules go with it */
  return rc;
}

/* ---- the parent: ncu over the child ------------------------------------------------------ */

/* An ncu left to exit on its own after its CSV was read (KEVO_PROFILE_EARLY_READ): reaped at
 * the next profile, killed with its group when the worker ends. */
static pid_t lingering;

static void lingering_reap(int kill_it) {
  if (lingering <= 0) return;
  if (kill_it) kill(-lingering, SIGKILL);
  if (waitpid(lingering, NULL, kill_it ? 0 : WNOHANG) != 0) lingering = 0;
}

/* The whole of a file, NUL-terminated (at most TEXT_CAP bytes), or NULL. */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = malloc(TEXT_CAP + 1);
  size_t n = buf ? fread(buf, 1, TEXT_CAP, f) : 0;
  fclose(f);
  if (buf) buf[n] = '\0';
  return buf;
}

static cJSON *fail_reply(const char *code, const char *reason, const char *fmt, const char *a) {
  char msg[1024];
  snprintf(msg, sizeof msg, fmt, a);
  cJSON *r = kevo_gpu_error_reply(code, msg);
  cJSON_AddStringToObject(r, "reason", reason);
  return r;
}

/* Starts argv with stdout and stderr into out_path, in its own process group (killed with the
 * worker when pdeath). Returns its pid, or -1 when it could not fork. */
static pid_t spawn_group(char *const argv[], const char *out_path, int pdeath) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    setpgid(0, 0);
    if (pdeath) prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || nul < 0 || dup2(nul, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(126);
    execv(argv[0], argv);
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

/* Waits for pid until t0 + deadline_ms (wk_now_ms's clock), then kills its group. Returns the
 * exit status, -2 on the deadline, -1 on an error. */
static int wait_group(pid_t pid, double t0, double deadline_ms) {
  for (;;) {
    int st;
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (w < 0 && errno != EINTR) return -1;
    if (wk_now_ms() - t0 > deadline_ms) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -2;
    }
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

/* The number of metrics in ncu's --metrics list. */
static int metric_count(void) {
  int n = 1;
  for (const char *p = wk_ncu_metrics(); *p; p++)
    n += *p == ',';
  return n;
}

/* wait_group for ncu, but with early (KEVO_PROFILE_EARLY_READ) returning 0 as soon as the CSV
 * in dir holds every row of the plans' kernels (the manifest's counts x the metric set): ncu's
 * own exit after it printed them is not waited for (lingering). */
static int wait_ncu(pid_t pid, double t0, double deadline_ms, const char *dir, int early) {
  if (!early) return wait_group(pid, t0, deadline_ms);
  char mpath[4200], csv[4200];
  snprintf(mpath, sizeof mpath, "%s/manifest", dir);
  snprintf(csv, sizeof csv, "%s/ncu.csv", dir);
  int want = -1, per = metric_count();
  off_t seen = -1; /* the CSV's size at its last count: read again only once it grew */
  for (;;) {
    int st;
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (w < 0 && errno != EINTR) return -1;
    if (wk_now_ms() - t0 > deadline_ms) return wait_group(pid, t0, 0); /* kills it */
    if (want < 0 && !access(mpath, F_OK)) { /* the child's last step: its kernel counts */
      char *text = slurp(mpath);
      cJSON *m = text ? cJSON_Parse(text) : NULL, *x;
      if (m && !cJSON_GetObjectItemCaseSensitive(m, "error")) {
        want = 0;
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(m, "plans")) {
          const cJSON *k = cJSON_GetObjectItemCaseSensitive(x, "kernels");
          want += cJSON_IsNumber(k) ? k->valueint : 0;
        }
      }
      cJSON_Delete(m);
      free(text);
    }
    struct stat sb;
    if (want > 0 && !stat(csv, &sb) && sb.st_size != seen) {
      seen = sb.st_size;
      char *text = slurp(csv);
      int rows = text ? wk_ncu_rows(text) : 0;
      free(text);
      if (rows >= want * per) {
        if (lingering > 0) waitpid(lingering, NULL, 0); /* the one before: long gone by now */
        lingering = pid;
        return 0;
      }
    }
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

/* argv of one ncu run over the replay child (docs/profile.md "Cost"): ncu's flags (clocks left
 * alone, the log in DIR/ncu.csv, no child process of the child followed, no rules run; with
 * plans, only their kernels profiled: wk_ncu_kernel_filter, so the child's kv_* set-up kernels
 * take no passes), then `SELF worker --profile-replay DIR --device N [--profile-standby PID]`.
 * The strings live in the caller's buffers and c. */
enum { NCU_ARGV = 40 };
typedef struct ncu_cmd {
  char *argv[NCU_ARGV];
  char csv[4200], dev[16], pid[24], filter[16384];
} ncu_cmd;

static void ncu_argv(ncu_cmd *c, char *ncu, char *self, char *dir, int ordinal, pid_t standby,
                     const cJSON *plans) {
  snprintf(c->csv, sizeof c->csv, "%s/ncu.csv", dir);
  snprintf(c->dev, sizeof c->dev, "%d", ordinal);
  snprintf(c->pid, sizeof c->pid, "%ld", (long)standby);
  char *fixed[] = {ncu,
                   "--csv",
                   "--print-units",
                   "base",
                   "--log-file",
                   c->csv,
                   "--clock-control",
                   "none",
                   "--metrics",
                   (char *)wk_ncu_metrics(),
                   "--target-processes",
                   "application-only",
                   "--apply-rules",
                   "no",
                   NULL};
  int n = 0;
  for (; fixed[n]; n++)
    c->argv[n] = fixed[n];
  if (plans && !wk_ncu_kernel_filter(plans, c->filter, sizeof c->filter)) {
    c->argv[n++] = "--kernel-name-base";
    c->argv[n++] = "mangled";
    c->argv[n++] = "--kernel-name";
    c->argv[n++] = c->filter;
  } else if (!plans) { /* a standby, started before its plans are known: all but the child's,
                        * and kv_rate, its warm-up (standby_warmup) */
    c->argv[n++] = "--kernel-name";
    c->argv[n++] = env_on("KEVO_PROFILE_WARMUP") ? "regex:^(?!kv_)|^kv_rate$" : "regex:^(?!kv_)";
  }
  char *child[] = {self, "worker", "--profile-replay", dir, "--device", c->dev, NULL};
  for (int i = 0; child[i]; i++)
    c->argv[n++] = child[i];
  if (standby > 0) {
    c->argv[n++] = "--profile-standby";
    c->argv[n++] = c->pid;
  }
  c->argv[n] = NULL; /* at most 14 + 4 + 6 + 2 + 1 */
}

/* ---- the standby: an ncu already started (docs/profile.md "Cost") -------------------------- */

/* One ncu over a replay child that has opened its device and waits for a request: started when
 * asked (the profile_standby op, or after each profile once asked), it takes the next profile
 * request of its device, so ncu's start-up and the child's CUDA set-up are not waited for. */
static struct {
  pid_t pid; /* 0: none */
  int ordinal, armed, ready;
  char dir[4096];
} standby;

static void standby_drop(void) {
  if (standby.pid > 0) {
    int st;
    kill(-standby.pid, SIGKILL);
    kill(standby.pid, SIGKILL);
    waitpid(standby.pid, &st, 0);
    rm_dir(standby.dir);
  }
  standby.pid = 0;
}

void kevo_gpu_profile_standby_stop(void) {
  standby_drop();
  lingering_reap(1);
  standby.armed = 0;
}

/* Starts the standby for device ordinal (dropping one of another device). 0, or -1 with why. */
static int standby_start(int ordinal, char *why, size_t whylen) {
  char ncu[4096], self[4096];
  if (standby.pid > 0 && standby.ordinal == ordinal && !waitpid(standby.pid, NULL, WNOHANG))
    return 0; /* one is waiting already */
  if (standby.pid > 0) rm_dir(standby.dir);
  standby.pid = 0;
  if (wk_ncu_find(ncu, sizeof ncu)) return snprintf(why, whylen, "no ncu at %s", ncu), -1;
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return snprintf(why, whylen, "cannot find kevo's own binary"), -1;
  self[n] = '\0';
  const char *tmp = getenv("TMPDIR");
  snprintf(standby.dir, sizeof standby.dir, "%s/kevo-profile-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  char go[4200], outp[4200];
  if (!mkdtemp(standby.dir)) return snprintf(why, whylen, "mkdtemp: %s", strerror(errno)), -1;
  snprintf(go, sizeof go, "%s/go", standby.dir);
  snprintf(outp, sizeof outp, "%s/ncu.out", standby.dir);
  if (mkfifo(go, 0600)) {
    snprintf(why, whylen, "mkfifo: %s", strerror(errno));
    rm_dir(standby.dir);
    return -1;
  }
  ncu_cmd cmd;
  ncu_argv(&cmd, ncu, self, standby.dir, ordinal, getpid(), NULL);
  standby.pid = spawn_group(cmd.argv, outp, 1);
  if (standby.pid < 0) {
    standby.pid = 0;
    snprintf(why, whylen, "fork: %s", strerror(errno));
    rm_dir(standby.dir);
    return -1;
  }
  standby.ordinal = ordinal;
  standby.ready = 0;
  return 0;
}

void kevo_gpu_profile_standby_settle(double max_ms) {
  if (standby.pid <= 0 || standby.ready) return;
  char path[4200];
  snprintf(path, sizeof path, "%s/ready", standby.dir);
  double t0 = wk_now_ms();
  while (wk_now_ms() - t0 < max_ms && access(path, F_OK) && !waitpid(standby.pid, NULL, WNOHANG)) {
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  standby.ready = 1; /* set up, gone or late: not waited for again */
}

cJSON *kevo_gpu_profile_standby(int ordinal) {
  char why[600] = "";
  standby.armed = 1;
  if (standby_start(ordinal, why, sizeof why))
    return fail_reply("E_UNSUPPORTED", "no_tool", "%s", why);
  cJSON *r = cJSON_CreateObject();
  cJSON_AddBoolToObject(r, "ok", 1);
  return r;
}

/* Hands the request (already in the standby's DIR/request) to the standby: one byte on DIR/go,
 * retried while the child has not opened it yet (ncu still starting). Returns 0, or -1 when
 * the standby died or did not open it before t0 + deadline_ms. */
static int standby_go(const char *dir, pid_t pid, double t0, double deadline_ms) {
  char go[4200];
  snprintf(go, sizeof go, "%s/go", dir);
  while (wk_now_ms() - t0 < deadline_ms) {
    int fd = open(go, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      int ok = write(fd, "g", 1) == 1;
      close(fd);
      return ok ? 0 : -1;
    }
    if (errno != ENXIO || waitpid(pid, NULL, WNOHANG)) return -1;
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return -1;
}

/* Assigns ncu's kernels (in order) to the plans by the counts in the manifest. */
static cJSON *plans_reply(const cJSON *req, const cJSON *man, cJSON *kernels) {
  cJSON *out = cJSON_CreateArray();
  const cJSON *pl =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(req, "profile"), "plans");
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(man, "plans")->child;
  cJSON *k = kernels ? kernels->child : NULL;
  /* the child's own kernels (drawing inputs, poisoning scratch) come first: kv_* (when ncu's
   * kernel filter was not used) */
  for (; k; k = k->next) {
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(k, "name"));
    if (!name || strncmp(name, "kv_", 3)) break;
  }
  const cJSON *x;
  cJSON_ArrayForEach(x, pl) {
    cJSON *p = cJSON_CreateObject();
    cJSON_AddItemToArray(out, p);
    const char *label = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "label"));
    const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "role"));
    cJSON_AddStringToObject(p, "label", label ? label : "?");
    cJSON_AddStringToObject(p, "role", role ? role : "candidate");
    const cJSON *err = m ? cJSON_GetObjectItemCaseSensitive(m, "error") : NULL;
    const cJSON *nk = m ? cJSON_GetObjectItemCaseSensitive(m, "kernels") : NULL;
    if (!m) {
      cJSON_AddStringToObject(p, "error", "the replay stopped before this plan");
    } else if (cJSON_IsString(err)) {
      cJSON_AddStringToObject(p, "error", err->valuestring);
    } else if (!cJSON_IsNumber(nk)) {
      cJSON_AddStringToObject(p, "error", "not run: an earlier plan lost the CUDA context");
    } else {
      cJSON *ks = cJSON_AddArrayToObject(p, "kernels");
      for (int i = 0; i < nk->valueint && k; i++) {
        cJSON *next = k->next;
        cJSON_AddItemToArray(ks, cJSON_DetachItemViaPointer(kernels, k));
        k = next;
      }
      if (cJSON_GetArraySize(ks) < nk->valueint)
        cJSON_AddStringToObject(p, "error", "ncu reported fewer kernels than the plan launched");
    }
    if (m) m = m->next;
  }
  return out;
}

/* What ncu's run amounts to: a failure reply (the most fundamental reason first: the deadline,
 * no ncu, ncu's own error, no GPU, no profile), or {"ok": true, "tool": "ncu"} with *kernels
 * parsed from the log. */
static cJSON *judge(int rc, double deadline, const char *ncu, const char *log, const char *out,
                    const cJSON *man, cJSON **kernels) {
  char reason[32], why[600], ms[32];
  const cJSON *merr = cJSON_GetObjectItemCaseSensitive(man, "error");
  kevo_error err = {0};
  if (rc == -2) {
    snprintf(ms, sizeof ms, "%.0f", deadline);
    return fail_reply("E_TIMEOUT", "timeout", "profiling took longer than its deadline (%s ms)",
                      ms);
  }
  if (rc == -1 || rc == 127 || rc == 126)
    return fail_reply("E_UNSUPPORTED", "no_tool", "cannot run %s", ncu);
  int failed =
      wk_ncu_failure(log, reason, why, sizeof why) || wk_ncu_failure(out, reason, why, sizeof why);
  if (failed && (!strcmp(reason, "permission") || !strcmp(reason, "unsupported")))
    return fail_reply("E_UNSUPPORTED", reason, "%s", why);
  if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(man, "no_gpu")) && cJSON_IsString(merr))
    return fail_reply("E_NOGPU", "no_gpu", "%s", merr->valuestring);
  if (cJSON_IsString(merr))
    return fail_reply("E_WORKER", "failed", "the replay failed: %s", merr->valuestring);
  /* an ==ERROR== about one kernel (a candidate that faulted under replay) leaves the others' */
  if (failed && (!log || wk_ncu_parse(log, kernels, &err)))
    return fail_reply("E_UNSUPPORTED", reason, "%s", why);
  if (!man || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(man, "plans"))) {
    snprintf(ms, sizeof ms, "%d", rc);
    return fail_reply("E_WORKER", "failed", "the replay child left no manifest (ncu exit %s)", ms);
  }
  if (!*kernels && (!log || wk_ncu_parse(log, kernels, &err))) {
    snprintf(ms, sizeof ms, "%d", rc);
    return fail_reply("E_UNSUPPORTED", "failed", "ncu exited %s without a profile", ms);
  }
  cJSON *res = cJSON_CreateObject();
  cJSON_AddBoolToObject(res, "ok", 1);
  cJSON_AddStringToObject(res, "tool", "ncu");
  if (failed) cJSON_AddStringToObject(res, "warning", why);
  return res;
}

/* The reply's timeline (docs/profile.md "Cost"): ms since the request came (t0) of the
 * worker's own steps (already in tl) and of the child's, from the manifest's "t" and each plan's
 * t0/t1 (CLOCK_MONOTONIC in both processes); a standby's set-up comes out negative. */
static void timeline_child(cJSON *tl, const cJSON *man, double t0) {
  const cJSON *x, *t = cJSON_GetObjectItemCaseSensitive(man, "t");
  cJSON *c = cJSON_AddObjectToObject(tl, "child");
  cJSON_ArrayForEach(x, t) {
    if (cJSON_IsNumber(x))
      cJSON_AddNumberToObject(c, x->string, round((x->valuedouble - t0) * 10) / 10);
  }
  cJSON *pl = cJSON_AddArrayToObject(c, "plans");
  cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(man, "plans")) {
    cJSON *o = cJSON_CreateObject();
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(x, "t0"),
                *b = cJSON_GetObjectItemCaseSensitive(x, "t1");
    if (cJSON_IsNumber(a))
      cJSON_AddNumberToObject(o, "start", round((a->valuedouble - t0) * 10) / 10);
    if (cJSON_IsNumber(b))
      cJSON_AddNumberToObject(o, "end", round((b->valuedouble - t0) * 10) / 10);
    cJSON_AddItemToArray(pl, o);
  }
}

static void tl_stamp(cJSON *tl, const char *step, double t0) {
  cJSON_AddNumberToObject(tl, step, round((wk_now_ms() - t0) * 10) / 10);
}

/* The last n bytes of text (a whole line first), for a failure's detail. */
static const char *tail_of(const char *text, size_t n) {
  if (!text) return "";
  size_t len = strlen(text);
  if (len <= n) return text;
  const char *p = text + len - n, *nl = strchr(p, '\n');
  return nl ? nl + 1 : p;
}

cJSON *kevo_gpu_profile(int ordinal, const cJSON *req, const kevo_blob *blobs, size_t nblobs) {
  double t0 = wk_now_ms();
  lingering_reap(0);
  const cJSON *prof = cJSON_GetObjectItemCaseSensitive(req, "profile");
  const cJSON *pl = cJSON_GetObjectItemCaseSensitive(prof, "plans");
  const cJSON *dl = cJSON_GetObjectItemCaseSensitive(prof, "deadline_ms");
  if (!cJSON_IsArray(pl) || cJSON_GetArraySize(pl) < 1 || cJSON_GetArraySize(pl) > MAX_PLANS)
    return fail_reply("E_PARSE", "failed", "request: profile.plans must be 1 to %s plans", "64");
  double deadline = cJSON_IsNumber(dl) && dl->valuedouble > 0 ? dl->valuedouble : 60000;
  char ncu[4096], self[4096];
  if (wk_ncu_find(ncu, sizeof ncu))
    return fail_reply("E_UNSUPPORTED", "no_tool",
                      "no Nsight Compute: %s is not there (set KEVO_NCU or put ncu on PATH)", ncu);
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return fail_reply("E_INTERNAL", "failed", "cannot find kevo's own binary%s", "");
  self[n] = '\0';
  /* the standby of this device when one waits, else a folder of its own */
  pid_t pid = 0;
  char dir[4096];
  if (standby.pid > 0 && standby.ordinal == ordinal && !waitpid(standby.pid, NULL, WNOHANG)) {
    pid = standby.pid;
    snprintf(dir, sizeof dir, "%s", standby.dir);
  } else if (standby.pid > 0) {
    standby_drop();
  }
  standby.pid = 0; /* taken (or none) */
  const char *tmp = getenv("TMPDIR");
  if (!pid) snprintf(dir, sizeof dir, "%s/kevo-profile-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!pid && !mkdtemp(dir))
    return fail_reply("E_IO", "failed", "cannot make a folder: %s", strerror(errno));

  cJSON *res = NULL, *man = NULL, *kernels = NULL, *tl = cJSON_CreateObject();
  char *log = NULL, *out = NULL;
  char path[4200], outp[4200];
  snprintf(path, sizeof path, "%s/request", dir);
  snprintf(outp, sizeof outp, "%s/ncu.out", dir);
  kevo_error err = {0};
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  cJSON *copy = cJSON_Duplicate(req, 1);
  if (fd < 0 || !copy || kevo_frame_write(fd, copy, blobs, nblobs, &err)) {
    res = fail_reply("E_IO", "failed", "cannot write the replay request: %s",
                     err.msg[0] ? err.msg : strerror(errno));
    goto done;
  }
  close(fd);
  fd = -1;
  tl_stamp(tl, "written", t0);
  ncu_cmd cmd;
  ncu_argv(&cmd, ncu, self, dir, ordinal, 0, pl);
  if (pid && standby_go(dir, pid, t0, deadline)) { /* the standby died: run one of our own */
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
    pid = 0;
  }
  cJSON_AddNumberToObject(tl, "at", t0); /* CLOCK_MONOTONIC ms, to line up other clocks */
  cJSON_AddBoolToObject(tl, "standby", pid > 0);
  if (!pid) pid = spawn_group(cmd.argv, outp, 0);
  tl_stamp(tl, "go", t0);
  int early = env_on("KEVO_PROFILE_EARLY_READ");
  int rc = pid > 0 ? wait_ncu(pid, t0, deadline, dir, early) : -1;
  if (early) cJSON_AddBoolToObject(tl, "early_read", lingering == pid);
  tl_stamp(tl, "ncu_exit", t0);
  log = slurp(cmd.csv);
  out = slurp(outp);
  char mpath[4200];
  snprintf(mpath, sizeof mpath, "%s/manifest", dir);
  char *mtext = slurp(mpath);
  man = mtext ? cJSON_Parse(mtext) : NULL;
  free(mtext);
  res = judge(rc, deadline, ncu, log, out, man, &kernels);
  tl_stamp(tl, "parsed", t0);
  if (man) timeline_child(tl, man, t0);
  if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "ok"))) {
    cJSON_AddItemToObject(res, "plans", plans_reply(req, man, kernels));
    if (getenv("KEVO_PROFILE_KEEP_CSV")) cJSON_AddStringToObject(res, "csv", log ? log : "");
  } else { /* what ncu and the child said last: the reason is there when the message is not */
    char detail[1400];
    snprintf(detail, sizeof detail, "%s%s%s", tail_of(out, 700), out && log ? "\n" : "",
             tail_of(log, 600));
    cJSON_AddStringToObject(res, "detail", detail);
  }
  cJSON_AddNumberToObject(res, "ms", (double)(long)(wk_now_ms() - t0));
  cJSON_AddItemToObject(res, "timeline", tl);
  tl = NULL;
done:
  cJSON_Delete(tl);
  if (fd >= 0) close(fd);
  cJSON_Delete(copy);
  cJSON_Delete(man);
  cJSON_Delete(kernels);
  free(log);
  free(out);
  rm_dir(dir);
  if (standby.armed && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "ok"))) {
    /* the next one starts while the driver reads this reply */
    char why[600];
    standby_start(ordinal, why, sizeof why);
  }
  return res;
}
