/* triton_spawn.h: starting one compile server in its sandbox (internal to triton.c).
 *
 * The child gets: a scrubbed environment (PATH, HOME, TMPDIR, TRITON_CACHE_DIR, locale; none of
 * the parent's variables, so no API key), its own session (setsid: no controlling terminal) and
 * process group, PR_SET_PDEATHSIG, resource
 * limits (CPU seconds, address space, file size, open files, no core dumps),
 * PR_SET_NO_NEW_PRIVS and, where the kernel has Landlock, a ruleset under which it may write only
 * beneath its work directory (and to /dev/null) and may neither bind nor connect TCP sockets
 * (Landlock ABI >= 4) nor signal processes outside its sandbox (ABI >= 6). fds: 0 /dev/null,
 * 1 and 2 the log file, 3 requests in, 4 replies out; nothing else is inherited. */
#ifndef KEVO_TRITON_SPAWN_H
#define KEVO_TRITON_SPAWN_H

#include <sys/types.h>

#include "status.h"

typedef struct triton_spawn_opts {
  const char *python;      /* absolute path of the interpreter */
  const char *script;      /* the server's .py file */
  const char *workdir;     /* the only place it may write; its cwd and HOME */
  const char *log_path;    /* its stdout and stderr (inside workdir) */
  const char *arch;        /* argument to the server: the warm-up target */
  int landlock_abi;        /* triton_landlock_abi(); 0: no Landlock */
  double cpu_s;            /* RLIMIT_CPU; 0: none */
  double as_bytes;         /* RLIMIT_AS; 0: none */
  double fsize_bytes;      /* RLIMIT_FSIZE */
  int nofile;              /* RLIMIT_NOFILE */
  double child_as_bytes;   /* RLIMIT_AS of each compile process the server forks */
  long drop_uid, drop_gid; /* the server becomes this user once Triton is imported; -1: stays */
  int unchecked;           /* 1: no allow-list (tests of the OS wall alone) */
  int prefault;            /* 1: each compile process warms up before its request (the server's
                              own kernel, to PTX), taking a fresh fork's page faults early */
} triton_spawn_opts;

typedef struct triton_proc {
  pid_t pid;   /* 0: not running */
  int to_fd;   /* requests: the server's fd 3 */
  int from_fd; /* replies: the server's fd 4 */
} triton_proc;

/* The Landlock ABI version the kernel offers (0 when it has none or it is disabled), and in
 * note (if not NULL) a sentence saying so. */
int triton_landlock_abi(char *note, size_t note_len);

/* Forks and execs the server. KEVO_E_IO when the pipes or fork fail. A child that cannot set
 * up its sandbox writes why to its log and exits 126 before running any Python. */
int triton_spawn(const triton_spawn_opts *o, triton_proc *out, kevo_error *err);

/* Kills the server's process group (SIGKILL), closes the pipes and reaps it. Returns its wait
 * status (or -1 if it was not running). Idempotent. */
int triton_proc_kill(triton_proc *p);

/* Reaps a server that closed its pipe (EOF) and returns its wait status, killing it if it does
 * not exit within a second. */
int triton_proc_reap(triton_proc *p);

#endif
