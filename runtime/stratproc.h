/* stratproc.h: the strategy process, seen from the host (kevo run, kevo replay).
 *
 * A strategy is code kevo does not trust. It runs in a process of its own: kevo itself,
 * re-executed as `kevo strategy-process` (runtime/cmd_strategyproc.c), with an empty
 * environment, descriptors 0 (requests from the host... replies to it), 1 (frames to the host)
 * and 2 (its stderr, a pipe the host reads) and nothing else, confined by confine.h. The two
 * talk in frames (proto.h) whose JSON the Lua on each side writes and reads
 * (lua/kevo/boundary.lua on the host, lua/kevo/remote.lua in the process).
 *
 * Nothing the process sends is trusted: the host validates every message, bounds its size and
 * kills the process (SIGKILL) when it misbehaves or overstays a deadline. */
#ifndef KEVO_STRATPROC_H
#define KEVO_STRATPROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"
#include "status.h"

enum {
  KEVO_STRATPROC_MAX_FRAME = 16 << 20, /* bytes of JSON in one message, either way */
  KEVO_STRATPROC_ERR_CAP = 64 << 10,   /* stderr bytes held for the host between reads */
};

typedef struct kevo_stratproc_opts {
  uint64_t seed;    /* seeds the process's math.random */
  unsigned cpu_s;   /* its CPU-time limit (RLIMIT_CPU) */
  size_t mem_bytes; /* its Lua memory cap; the address-space limit is this plus room for kevo */
} kevo_stratproc_opts;

typedef struct kevo_stratproc {
  pid_t pid; /* 0 once reaped */
  int to_fd, from_fd, err_fd;
  int wstatus, reaped;
  kevo_link_buf in;    /* what was read of the process's messages */
  kevo_link_spin spin; /* how long to poll the pipe before sleeping (proto.h) */
  struct {
    long long next_ns; /* when to look at the machine's runnable threads again */
    int ok, ncpus, off;
  } gate;                  /* whether a spin has an idle CPU to take (stratproc.c) */
  long long partial_since; /* ms: when a message began that is not complete yet; 0: none */
  size_t errlen, errdropped;
  char err[KEVO_STRATPROC_ERR_CAP];
} kevo_stratproc;

/* Starts the process. Everything the child uses is prepared before fork. */
int kevo_stratproc_start(kevo_stratproc *p, const kevo_stratproc_opts *o, kevo_error *err);
/* Sends one message; KEVO_E_TIMEOUT when the process does not read it within timeout_ms. */
int kevo_stratproc_send(kevo_stratproc *p, const char *text, size_t len, int timeout_ms,
                        kevo_error *err);
/* Waits up to timeout_ms for the next message, collecting stderr meanwhile. *text is
 * malloc'd (the caller frees). KEVO_E_TIMEOUT: none came, or a signal (Ctrl-C) cut the wait
 * short so that the caller sees it at once; KEVO_E_IO: the process closed its end (it died or
 * exited); KEVO_E_PARSE: a malformed or oversized frame. A frame once begun must be complete
 * within 10 s. */
int kevo_stratproc_recv(kevo_stratproc *p, char **text, size_t *len, int timeout_ms,
                        kevo_error *err);
/* Whether a wait may spin now (proto.h): kevo's own waits on the process follow it, and the host
 * tells the process with each reply (lua/kevo/boundary.lua). */
int kevo_stratproc_spin_allowed(const kevo_stratproc *p);
/* Moves the stderr bytes collected so far into out (at most cap), returns their count;
 * *dropped receives how many were dropped for want of room since the last call. */
size_t kevo_stratproc_take_stderr(kevo_stratproc *p, char *out, size_t cap, size_t *dropped);
/* Ends the process: waits up to grace_ms for it to exit by itself, then SIGKILL; reaps it,
 * collects its last stderr, closes the pipes, and writes how it ended ("exit 0", "killed by
 * signal 9") into how. Idempotent. */
void kevo_stratproc_end(kevo_stratproc *p, int grace_ms, char *how, size_t how_len);

#endif
