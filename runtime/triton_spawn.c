/* triton_spawn.c: one compile server in its sandbox. See triton_spawn.h. */
#include "triton_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Landlock's ABI, spelled out here so that older kernel headers still build (Debian 12's
 * linux/landlock.h stops at ABI 2); the values are the kernel's UAPI. */
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_REMOVE_DIR (1ULL << 4)
#define LL_FS_REMOVE_FILE (1ULL << 5)
#define LL_FS_MAKE_CHAR (1ULL << 6)
#define LL_FS_MAKE_DIR (1ULL << 7)
#define LL_FS_MAKE_REG (1ULL << 8)
#define LL_FS_MAKE_SOCK (1ULL << 9)
#define LL_FS_MAKE_FIFO (1ULL << 10)
#define LL_FS_MAKE_BLOCK (1ULL << 11)
#define LL_FS_MAKE_SYM (1ULL << 12)
#define LL_FS_REFER (1ULL << 13)     /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14)  /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#define LL_NET_BIND_TCP (1ULL << 0)  /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)

struct ll_ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

struct ll_path_beneath {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

int triton_landlock_abi(char *note, size_t note_len) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
  if (abi < 0) {
    int e = errno;
    if (note)
      snprintf(note, note_len,
               "Landlock unavailable (%s): each compile still runs under seccomp (no exec, no "
               "sockets, no chmod), but the kernel does not confine its reads and writes",
               e == ENOSYS       ? "the kernel lacks it"
               : e == EOPNOTSUPP ? "disabled at boot"
                                 : strerror(e));
    return 0;
  }
  if (note)
    snprintf(note, note_len,
             "Landlock ABI %ld: each compile may only read Python and Triton (no write, no "
             "exec%s), under seccomp; the server writes only under its temporary directory",
             abi, abi >= 4 ? ", no TCP" : "");
  return (int)abi;
}

/* In the child, before exec: only async-signal-safe calls from here on. */
static void child_fail(const char *what) {
  const char *e = strerror(errno);
  ssize_t r = write(2, "kevo triton sandbox: ", 21);
  r = write(2, what, strlen(what));
  r = write(2, ": ", 2);
  r = write(2, e, strlen(e));
  r = write(2, "\n", 1);
  (void)r;
  _exit(126);
}

static void set_limit(int resource, double value, const char *what) {
  if (value <= 0) return;
  struct rlimit rl = {(rlim_t)value, (rlim_t)value};
  struct rlimit cur;
  if (getrlimit(resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY && rl.rlim_max > cur.rlim_max)
    rl.rlim_cur = rl.rlim_max = cur.rlim_max;
  if (setrlimit(resource, &rl) != 0) child_fail(what);
}

static void child_landlock(const triton_spawn_opts *o) {
  int abi = o->landlock_abi;
  uint64_t fs = LL_FS_WRITE_FILE | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE | LL_FS_MAKE_CHAR |
                LL_FS_MAKE_DIR | LL_FS_MAKE_REG | LL_FS_MAKE_SOCK | LL_FS_MAKE_FIFO |
                LL_FS_MAKE_BLOCK | LL_FS_MAKE_SYM;
  if (abi >= 2) fs |= LL_FS_REFER;
  if (abi >= 3) fs |= LL_FS_TRUNCATE;
  if (abi >= 5) fs |= LL_FS_IOCTL_DEV;
  struct ll_ruleset_attr attr = {.handled_access_fs = fs};
  size_t size = sizeof attr.handled_access_fs;
  if (abi >= 4) {
    attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
    size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6) {
    attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
    size = sizeof attr;
  }
  int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (rs < 0) child_fail("landlock_create_ruleset");
  struct ll_path_beneath rule = {.allowed_access = fs};
  rule.parent_fd = open(o->workdir, O_PATH | O_CLOEXEC | O_DIRECTORY);
  if (rule.parent_fd < 0) child_fail("opening the work directory");
  if (syscall(SYS_landlock_add_rule, rs, LL_RULE_PATH_BENEATH, &rule, 0) != 0)
    child_fail("landlock_add_rule (work directory)");
  close(rule.parent_fd);
  rule.allowed_access =
      LL_FS_WRITE_FILE | (abi >= 3 ? LL_FS_TRUNCATE : 0) | (abi >= 5 ? LL_FS_IOCTL_DEV : 0);
  rule.parent_fd = open("/dev/null", O_PATH | O_CLOEXEC);
  if (rule.parent_fd >= 0) {
    if (syscall(SYS_landlock_add_rule, rs, LL_RULE_PATH_BENEATH, &rule, 0) != 0)
      child_fail("landlock_add_rule (/dev/null)");
    close(rule.parent_fd);
  }
  if (syscall(SYS_landlock_restrict_self, rs, 0) != 0) child_fail("landlock_restrict_self");
  close(rs);
}

static void close_from(int lowfd) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, (unsigned)lowfd, ~0U, 0) == 0) return;
#endif
  long max = sysconf(_SC_OPEN_MAX);
  for (long fd = lowfd; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
    close((int)fd);
}

static void child_run(const triton_spawn_opts *o, int req_r, int rep_w, int logfd,
                      char *const argv[], char *const envp[]) {
  /* A session of its own: no controlling terminal, so nothing in it can reach the user's. */
  if (setsid() < 0) child_fail("setsid");
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) child_fail("PR_SET_PDEATHSIG");
  int a = fcntl(req_r, F_DUPFD, 10), b = fcntl(rep_w, F_DUPFD, 10), c = fcntl(logfd, F_DUPFD, 10);
  if (a < 0 || b < 0 || c < 0) child_fail("dup");
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0) child_fail("/dev/null");
  if (dup2(devnull, 0) < 0 || dup2(c, 1) < 0 || dup2(c, 2) < 0 || dup2(a, 3) < 0 || dup2(b, 4) < 0)
    child_fail("dup2");
  close_from(5);
  if (chdir(o->workdir) != 0) child_fail("chdir");
  set_limit(RLIMIT_CPU, o->cpu_s, "RLIMIT_CPU");
  set_limit(RLIMIT_AS, o->as_bytes, "RLIMIT_AS");
  set_limit(RLIMIT_FSIZE, o->fsize_bytes, "RLIMIT_FSIZE");
  set_limit(RLIMIT_NOFILE, o->nofile, "RLIMIT_NOFILE");
  struct rlimit nocore = {0, 0};
  setrlimit(RLIMIT_CORE, &nocore);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) child_fail("PR_SET_NO_NEW_PRIVS");
  if (o->landlock_abi > 0) child_landlock(o);
  execve(o->python, argv, envp);
  child_fail(o->python);
}

int triton_spawn(const triton_spawn_opts *o, triton_proc *out, kevo_error *err) {
  char home[1200], tmp[1200], cache[1200], limits[320];
  snprintf(home, sizeof home, "HOME=%s", o->workdir);
  snprintf(tmp, sizeof tmp, "TMPDIR=%s/tmp", o->workdir);
  snprintf(cache, sizeof cache, "TRITON_CACHE_DIR=%s/cache", o->workdir);
  /* Each compile process's limits, for the zygote to apply after its fork. */
  snprintf(limits, sizeof limits,
           "{\"as_bytes\": %.0f, \"fsize_bytes\": %d, \"nofile\": %d, \"drop_uid\": %ld, "
           "\"drop_gid\": %ld, \"unchecked\": %s, \"prefault\": %s}",
           o->child_as_bytes, 1 << 20, 256, o->drop_uid, o->drop_gid,
           o->unchecked ? "true" : "false", o->prefault ? "true" : "false");
  /* The whole environment of the server: nothing of the parent's (API keys stay home). Each
   * compile process clears even this before it reads a candidate. */
  char *envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin",
                  home,
                  tmp,
                  cache,
                  "LANG=C.UTF-8",
                  "LC_ALL=C.UTF-8",
                  "PYTHONDONTWRITEBYTECODE=1",
                  "PYTHONHASHSEED=0",
                  "OMP_NUM_THREADS=1",
                  NULL};
  char *argv[] = {(char *)o->python, "-I", "-B", (char *)o->script, (char *)o->arch, limits, NULL};
  int req[2] = {-1, -1}, rep[2] = {-1, -1}, logfd = -1;
  if (pipe2(req, O_CLOEXEC) != 0 || pipe2(rep, O_CLOEXEC) != 0) {
    kevo_fail(err, KEVO_E_IO, "pipe: %s", strerror(errno));
    goto fail;
  }
  logfd = open(o->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (logfd < 0) {
    kevo_fail(err, KEVO_E_IO, "%s: %s", o->log_path, strerror(errno));
    goto fail;
  }
  pid_t pid = fork();
  if (pid < 0) {
    kevo_fail(err, KEVO_E_IO, "fork: %s", strerror(errno));
    goto fail;
  }
  if (pid == 0) child_run(o, req[0], rep[1], logfd, argv, envp);
  /* No setpgid(pid, pid) here: it would make the child a group leader, and setsid would fail.
   * triton_proc_kill signals the pid as well as the group for the moment before setsid. */
  close(req[0]);
  close(rep[1]);
  close(logfd);
  out->pid = pid;
  out->to_fd = req[1];
  out->from_fd = rep[0];
  return KEVO_OK;
fail:
  for (int i = 0; i < 2; i++) {
    if (req[i] >= 0) close(req[i]);
    if (rep[i] >= 0) close(rep[i]);
  }
  if (logfd >= 0) close(logfd);
  return err->status;
}

static void close_pipes(triton_proc *p) {
  if (p->to_fd >= 0) close(p->to_fd);
  if (p->from_fd >= 0) close(p->from_fd);
  p->to_fd = p->from_fd = -1;
}

int triton_proc_kill(triton_proc *p) {
  if (p->pid <= 0) {
    close_pipes(p);
    return -1;
  }
  kill(-p->pid, SIGKILL);
  kill(p->pid, SIGKILL);
  close_pipes(p);
  int status = 0;
  while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR) {
  }
  p->pid = 0;
  return status;
}

int triton_proc_reap(triton_proc *p) {
  if (p->pid <= 0) return -1;
  close_pipes(p);
  int status = 0;
  for (int i = 0; i < 100; i++) {
    pid_t r = waitpid(p->pid, &status, WNOHANG);
    if (r == p->pid) {
      kill(-p->pid, SIGKILL); /* its children (ptxas), if any */
      p->pid = 0;
      return status;
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return triton_proc_kill(p);
}
