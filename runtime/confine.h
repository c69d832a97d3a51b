/* confine.h: locking the calling process in, for code kevo does not trust (strategies).
 *
 * kevo_confine() applies, in this order and for good (nothing here can be undone):
 *   - PR_SET_PDEATHSIG (SIGKILL): the process dies with its parent;
 *   - PR_SET_DUMPABLE 0: no core file, no ptrace attach by other processes of the user;
 *   - Landlock with no filesystem access at all (no open, read, write, exec of any path), and
 *     where the kernel has them no TCP bind/connect and no signals or abstract sockets outside
 *     the process. On a kernel without Landlock this step is skipped and *note says so;
 *   - rlimits: CPU seconds, address space (not in sanitizer builds, whose shadow memory is
 *     terabytes of address space), no file growth, no core, no new descriptors;
 *   - PR_SET_NO_NEW_PRIVS and a seccomp filter (classic BPF, written here: no library) that
 *     refuses with EPERM sockets, connect, execve, fork, open for writing, ptrace, mount,
 *     namespaces, module loading and the file-changing calls (see confine.c for the list).
 * Descriptors are the caller's business: close what the process must not keep first.
 *
 * The process keeps what it already holds (its memory, its open descriptors) and may still
 * read and write those descriptors, allocate memory and exit. */
#ifndef KEVO_CONFINE_H
#define KEVO_CONFINE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#if defined(__SANITIZE_ADDRESS__)
#define KEVO_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KEVO_SANITIZED 1
#endif
#endif
#ifndef KEVO_SANITIZED
#define KEVO_SANITIZED 0
#endif

typedef struct kevo_confine_opts {
  unsigned cpu_s;       /* RLIMIT_CPU, seconds (SIGKILL past it); 0: none */
  size_t as_bytes;      /* RLIMIT_AS; 0: none (always none in sanitizer builds) */
  unsigned max_fds;     /* RLIMIT_NOFILE: descriptors numbered below this may exist; 0: keep */
  int require_landlock; /* nonzero: a kernel without Landlock is an error, not a note */
} kevo_confine_opts;

/* Confines the calling process (single-threaded) as above. *landlock_abi receives the Landlock
 * ABI used (0: none); note (may be NULL) a line saying what was applied or skipped. Fails with
 * KEVO_E_SANDBOX naming the step; the caller must then exit, not run the untrusted code. */
int kevo_confine(const kevo_confine_opts *o, int *landlock_abi, char *note, size_t note_len,
                 kevo_error *err);

/* The Landlock ABI the running kernel offers (0: none), without applying anything. */
int kevo_landlock_abi(void);

#endif
