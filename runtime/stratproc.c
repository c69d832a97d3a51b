/* stratproc.c: starting, talking to and ending the strategy process. See stratproc.h. */
#include "stratproc.h"

#include "confine.h"
#include "proto.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { FRAME_COMPLETE_MS = 10000, GATE_ON = 3 };
#define GATE_NS (20 * 1000 * 1000LL)

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static void close_from(int lowfd) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, (unsigned)lowfd, ~0U, 0) == 0) return;
#endif
  long max = sysconf(_SC_OPEN_MAX);
  for (long fd = lowfd; fd < (max > 0 ? max : 1024); fd++)
    close((int)fd);
}

int kevo_stratproc_start(kevo_stratproc *p, const kevo_stratproc_opts *o, kevo_error *err) {
  memset(p, 0, sizeof *p);
  p->to_fd = p->from_fd = p->err_fd = -1;
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return kevo_fail(err, KEVO_E_IO, "cannot find kevo itself: %s", strerror(errno));
  self[n] = '\0';
  char host[32], seed[32], cpu[32], mem[32];
  snprintf(host, sizeof host, "%ld", (long)getpid());
  snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
  snprintf(cpu, sizeof cpu, "%u", o->cpu_s);
  snprintf(mem, sizeof mem, "%zu", o->mem_bytes);
  char *argv[] = {"kevo", "strategy-process", host, seed, cpu, mem, NULL};
  /* No environment: no API key, no proxy settings, nothing of the user's, but the loader's
   * library path, without which kevo itself may not start again where its libraries sit
   * outside the system's (a GPU host's bundle, a private prefix). A sanitizer build gets its
   * options (the child ends by _exit, so no leak check runs there). */
  char *envp[4] = {NULL};
  int nenv = 0;
  char libpath[4096 + 16];
  const char *ld = getenv("LD_LIBRARY_PATH");
  if (ld && *ld &&
      snprintf(libpath, sizeof libpath, "LD_LIBRARY_PATH=%s", ld) < (int)sizeof libpath)
    envp[nenv++] = libpath;
#if KEVO_SANITIZED
  envp[nenv++] = "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1";
  envp[nenv++] = "UBSAN_OPTIONS=print_stacktrace=1";
#endif
  int req[2] = {-1, -1}, rep[2] = {-1, -1}, er[2] = {-1, -1};
  if (pipe2(req, O_CLOEXEC) || pipe2(rep, O_CLOEXEC) || pipe2(er, O_CLOEXEC)) {
    int e = errno;
    for (int i = 0; i < 2; i++)
      close_fd(&req[i]), close_fd(&rep[i]), close_fd(&er[i]);
    return kevo_fail(err, KEVO_E_IO, "cannot make pipes for the strategy process: %s", strerror(e));
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_IGN); /* Ctrl-C is the host's to handle: it stops the strategy itself */
    if (dup2(req[0], 0) < 0 || dup2(rep[1], 1) < 0 || dup2(er[1], 2) < 0) _exit(127);
    close_from(3);
    execve(self, argv, envp);
    _exit(127);
  }
  int e = errno;
  close_fd(&req[0]);
  close_fd(&rep[1]);
  close_fd(&er[1]);
  if (pid < 0) {
    close_fd(&req[1]), close_fd(&rep[0]), close_fd(&er[0]);
    return kevo_fail(err, KEVO_E_IO, "cannot start the strategy process: %s", strerror(e));
  }
  p->pid = pid;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t mine;
  int usable = sched_getaffinity(0, sizeof mine, &mine) == 0 ? CPU_COUNT(&mine) : 0;
  p->gate.ncpus = usable > 0 && (online <= 0 || usable < online) ? usable : (int)online;
  const char *spin = getenv("KEVO_STRATEGY_SPIN");
  p->gate.off = p->gate.ncpus < 2 || (spin && strcmp(spin, "0") == 0);
  p->to_fd = req[1];
  p->from_fd = rep[0];
  p->err_fd = er[0];
  fcntl(p->to_fd, F_SETFL, fcntl(p->to_fd, F_GETFL) | O_NONBLOCK);
  fcntl(p->from_fd, F_SETFL, fcntl(p->from_fd, F_GETFL) | O_NONBLOCK);
  fcntl(p->err_fd, F_SETFL, fcntl(p->err_fd, F_GETFL) | O_NONBLOCK);
  return KEVO_OK;
}

int kevo_stratproc_send(kevo_stratproc *p, const char *text, size_t len, int timeout_ms,
                        kevo_error *err) {
  if (p->to_fd < 0) return kevo_fail(err, KEVO_E_IO, "the strategy process has ended");
  if (len > KEVO_STRATPROC_MAX_FRAME)
    return kevo_fail(err, KEVO_E_NOMEM, "a message of %zu bytes to the strategy is over the cap",
                     len);
  int rc = kevo_frame_send_text(p->to_fd, text, len, timeout_ms, err);
  if (rc == KEVO_E_TIMEOUT)
    kevo_fail(err, rc, "the strategy process did not read its reply within %d ms", timeout_ms);
  return rc;
}

/* Reads what the process wrote on stderr, keeping the newest bytes when over the cap. */
static void drain_stderr(kevo_stratproc *p) {
  char chunk[4096];
  for (;;) {
    ssize_t r = read(p->err_fd, chunk, sizeof chunk);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) close_fd(&p->err_fd);
      return;
    }
    size_t n = (size_t)r;
    if (p->errlen + n > sizeof p->err) {
      size_t drop = p->errlen + n - sizeof p->err;
      if (drop > p->errlen) drop = p->errlen;
      memmove(p->err, p->err + drop, p->errlen - drop);
      p->errlen -= drop;
      p->errdropped += drop;
    }
    if (n > sizeof p->err) {
      p->errdropped += n - sizeof p->err;
      n = sizeof p->err;
    }
    memcpy(p->err + p->errlen, chunk + (size_t)r - n, n);
    p->errlen += n;
  }
}

/* The threads runnable on the machine now (/proc/loadavg's fourth field, "4/123": 4), this one
 * included; 0 when unknown. */
static int runnable_threads(void) {
  int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[128];
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  const char *at = text;
  for (int field = 0; field < 3 && at; field++) {
    at = strchr(at, ' ');
    if (at) at++;
  }
  return at ? atoi(at) : 0;
}

/* The spin gate: a spin is worth its CPU only where that CPU would otherwise sit idle. While
 * kevo waits for a message both kevo and the strategy process run (the process computes, or
 * spins for its own reply), so both may spin when the runnable threads, those two among them,
 * are at most the CPUs kevo may use. Looked at no more than every GATE_NS (a read of
 * /proc/loadavg costs a few us); off at the first look over, on after GATE_ON looks in a row
 * at or under, so a machine between two jobs does not turn it on. KEVO_STRATEGY_SPIN=0 (or a
 * single CPU) keeps it off. */
static void spin_gate(kevo_stratproc *p) {
  if (p->gate.off) return;
  long long now = kevo_link_now_ns();
  if (now < p->gate.next_ns) return;
  p->gate.next_ns = now + GATE_NS;
  int running = runnable_threads();
  if (running <= 0 || running > p->gate.ncpus)
    p->gate.ok = 0;
  else if (p->gate.ok < GATE_ON)
    p->gate.ok++;
  p->spin.allowed = p->gate.ok >= GATE_ON;
}

int kevo_stratproc_spin_allowed(const kevo_stratproc *p) {
  return p->spin.allowed;
}

int kevo_stratproc_recv(kevo_stratproc *p, char **text, size_t *len, int timeout_ms,
                        kevo_error *err) {
  *text = NULL;
  *len = 0;
  if (p->from_fd < 0) return kevo_fail(err, KEVO_E_IO, "the strategy process has ended");
  long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
  long long spin_end = -1; /* set when the pipe is first found empty */
  int slept = 0;
  for (;;) {
    int rc = kevo_link_take(&p->in, KEVO_STRATPROC_MAX_FRAME, text, len, err);
    if (rc) return rc;
    if (*text) {
      p->partial_since = 0;
      /* a hit: it came within the spin (a yield that lasted longer did not help) */
      if (spin_end > 0 && !slept) kevo_link_spun(&p->spin, kevo_link_now_ns() <= spin_end);
      return KEVO_OK;
    }
    ssize_t r = kevo_link_fill(&p->in, p->from_fd);
    if (r > 0) continue;
    if (r == 0 || r == -2) {
      if (p->err_fd >= 0) drain_stderr(p);
      return kevo_fail(err, KEVO_E_IO, "the strategy process closed its pipe (it ended)");
    }
    if (p->in.len > 0 && !p->partial_since) p->partial_since = now_ms();
    if (p->partial_since && now_ms() - p->partial_since > FRAME_COMPLETE_MS)
      return kevo_fail(err, KEVO_E_PARSE,
                       "the strategy process began a message and did not finish it");
    if (spin_end < 0) {
      spin_gate(p);
      spin_end = kevo_link_spin_until(&p->spin);
    }
    if (spin_end > 0 && kevo_link_now_ns() < spin_end) continue; /* the message may be close */
    if (spin_end > 0 && !slept) kevo_link_spun(&p->spin, 0);
    slept = 1;
    /* asleep until a message (or stderr) comes, the clock looked at every second */
    struct pollfd pf[2] = {{.fd = p->from_fd, .events = POLLIN},
                           {.fd = p->err_fd, .events = POLLIN}};
    long long left = deadline < 0 ? 1000 : deadline - now_ms();
    if (left < 0) left = 0;
    int pr = poll(pf, p->err_fd >= 0 ? 2 : 1, (int)(left > 1000 ? 1000 : left));
    /* a signal (the host's Ctrl-C) ends the wait: the caller looks at it now, not a slice late,
     * and the 2 s a strategy gets after Ctrl-C run from the key press */
    if (pr < 0 && errno == EINTR)
      return kevo_fail(err, KEVO_E_TIMEOUT, "a signal came before a message");
    if (pr < 0) return kevo_fail(err, KEVO_E_IO, "poll: %s", strerror(errno));
    if (pr > 0 && p->err_fd >= 0 && pf[1].revents) drain_stderr(p);
    if (pr > 0 && pf[0].revents) continue;
    if (deadline >= 0 && now_ms() >= deadline)
      return kevo_fail(err, KEVO_E_TIMEOUT, "no message from the strategy process in time");
  }
}

size_t kevo_stratproc_take_stderr(kevo_stratproc *p, char *out, size_t cap, size_t *dropped) {
  if (p->err_fd >= 0) drain_stderr(p);
  size_t n = p->errlen < cap ? p->errlen : cap;
  memcpy(out, p->err + (p->errlen - n), n); /* the newest bytes when out is smaller */
  if (dropped) *dropped = p->errdropped + (p->errlen - n);
  p->errlen = 0;
  p->errdropped = 0;
  return n;
}

static const char *signal_name(int sig) {
  switch (sig) {
  case SIGKILL:
    return "SIGKILL";
  case SIGXCPU:
    return "SIGXCPU: its CPU-time limit";
  case SIGSEGV:
    return "SIGSEGV";
  case SIGABRT:
    return "SIGABRT";
  case SIGSYS:
    return "SIGSYS: a system call seccomp forbids";
  case SIGBUS:
    return "SIGBUS";
  default:
    return "";
  }
}

void kevo_stratproc_end(kevo_stratproc *p, int grace_ms, char *how, size_t how_len) {
  close_fd(&p->to_fd); /* a process waiting for a reply reads EOF and ends */
  if (p->pid > 0 && !p->reaped) {
    long long deadline = now_ms() + (grace_ms > 0 ? grace_ms : 0);
    int st = 0;
    pid_t r;
    while ((r = waitpid(p->pid, &st, WNOHANG)) == 0 && now_ms() < deadline) {
      struct timespec ts = {0, 5 * 1000 * 1000};
      nanosleep(&ts, NULL);
      if (p->err_fd >= 0) drain_stderr(p);
    }
    if (r == 0) {
      kill(p->pid, SIGKILL);
      while ((r = waitpid(p->pid, &st, 0)) < 0 && errno == EINTR) {
      }
    }
    p->reaped = 1;
    p->wstatus = st;
  }
  if (p->err_fd >= 0) drain_stderr(p);
  close_fd(&p->from_fd);
  close_fd(&p->err_fd);
  kevo_link_free(&p->in);
  if (how && how_len) {
    if (!p->reaped)
      snprintf(how, how_len, "not started");
    else if (WIFEXITED(p->wstatus))
      snprintf(how, how_len, "exit %d", WEXITSTATUS(p->wstatus));
    else if (WIFSIGNALED(p->wstatus)) {
      const char *nm = signal_name(WTERMSIG(p->wstatus));
      snprintf(how, how_len, "killed by signal %d%s%s", WTERMSIG(p->wstatus), *nm ? " " : "", nm);
    } else
      snprintf(how, how_len, "ended (status %d)", p->wstatus);
  }
}
