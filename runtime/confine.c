/* confine.c: Landlock, rlimits and a seccomp filter for untrusted code. See confine.h.
 *
 * The seccomp filter is classic BPF written here rather than built with libseccomp: it is a
 * deny list of ~70 system calls plus two argument checks (open flags, clone flags), small
 * enough to read in one screen, and it adds no library to every kevo build and GPU host. */
#include "confine.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- Landlock (the kernel's UAPI values: Debian 12's linux/landlock.h stops at ABI 2) ---- */
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_restrict_self 446
#endif
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_FS_ABI1 ((1ULL << 13) - 1)            /* execute .. make_sym: every right of ABI 1 */
#define LL_FS_REFER (1ULL << 13)                 /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14)              /* ABI 3 */
#define LL_NET_TCP ((1ULL << 0) | (1ULL << 1))   /* ABI 4: bind, connect */
#define LL_FS_IOCTL_DEV (1ULL << 15)             /* ABI 5 */
#define LL_SCOPE_ALL ((1ULL << 0) | (1ULL << 1)) /* ABI 6: abstract unix sockets, signals */

struct ll_ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

int kevo_landlock_abi(void) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : (int)abi;
}

/* A ruleset that handles every access right the ABI knows and allows none: no path can be
 * opened, made or removed. */
static int landlock_nothing(int abi, kevo_error *err) {
  struct ll_ruleset_attr attr = {.handled_access_fs = LL_FS_ABI1};
  size_t size = sizeof attr.handled_access_fs;
  if (abi >= 2) attr.handled_access_fs |= LL_FS_REFER;
  if (abi >= 3) attr.handled_access_fs |= LL_FS_TRUNCATE;
  if (abi >= 4) {
    attr.handled_access_net = LL_NET_TCP;
    size = 2 * sizeof(uint64_t);
  }
  if (abi >= 5) attr.handled_access_fs |= LL_FS_IOCTL_DEV;
  if (abi >= 6) {
    attr.scoped = LL_SCOPE_ALL;
    size = sizeof attr;
  }
  int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (rs < 0) return kevo_fail(err, KEVO_E_SANDBOX, "landlock_create_ruleset: %s", strerror(errno));
  int rc = (int)syscall(SYS_landlock_restrict_self, rs, 0);
  int e = errno;
  close(rs);
  if (rc) return kevo_fail(err, KEVO_E_SANDBOX, "landlock_restrict_self: %s", strerror(e));
  return KEVO_OK;
}

/* ---- seccomp ---- */
#if defined(__x86_64__)
#define KEVO_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define KEVO_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "kevo's seccomp filter knows x86_64 and aarch64 only"
#endif

/* Refused with EPERM (those the architecture has). open/openat and clone are checked below. */
/* clang-format off */
static const int denied[] = {
#define D(n) __NR_##n
    D(socket), D(socketpair), D(connect), D(bind), D(listen), D(accept), D(accept4),
    D(sendto), D(sendmsg), D(sendmmsg), D(execve), D(execveat), D(ptrace),
    D(process_vm_readv), D(process_vm_writev), D(pidfd_getfd), D(mount), D(umount2),
    D(pivot_root), D(chroot), D(unshare), D(setns), D(keyctl), D(add_key), D(request_key),
    D(bpf), D(perf_event_open), D(userfaultfd), D(io_uring_setup), D(io_uring_enter),
    D(io_uring_register), D(name_to_handle_at), D(open_by_handle_at), D(init_module),
    D(finit_module), D(delete_module), D(kexec_load), D(reboot), D(swapon), D(swapoff),
    D(acct), D(settimeofday), D(clock_settime), D(mknodat), D(linkat), D(unlinkat),
    D(renameat), D(renameat2), D(mkdirat), D(symlinkat), D(fchmod), D(fchmodat), D(fchown),
    D(fchownat), D(truncate), D(ftruncate), D(memfd_create), D(personality), D(openat2),
    D(fanotify_init), D(inotify_init1), D(quotactl), D(setuid), D(setgid), D(setreuid),
    D(setregid), D(setresuid), D(setresgid), D(setgroups), D(vhangup), D(seccomp),
#ifdef __NR_fork
    D(fork), D(vfork), D(open), D(creat), D(mknod), D(link), D(unlink), D(rename), D(mkdir),
    D(rmdir), D(symlink), D(chmod), D(chown), D(lchown), D(uselib), D(inotify_init),
#endif
#undef D
};
/* clang-format on */

/* Open flags that write or create: any of them and the open is refused. */
#define OPEN_WRITE_FLAGS                                                                           \
  (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND | 020000000 /* O_TMPFILE */)

enum { MAX_INSNS = 160, MAX_FIXUPS = 160 };

/* Jump targets, resolved once the program is laid out (classic BPF jumps only forward). */
enum { L_NEXT = 0, L_OPEN, L_OPENAT, L_CLONE, L_ALLOW, L_DENY, L_NOSYS, L_COUNT };

typedef struct bpf_prog {
  struct sock_filter f[MAX_INSNS];
  unsigned n;
  unsigned label[L_COUNT];
  struct bpf_fix {
    unsigned at;
    uint8_t jt, jf;
  } fix[MAX_FIXUPS];
  unsigned nfix;
} bpf_prog;

static void emit(bpf_prog *p, uint16_t code, uint32_t k) {
  if (p->n < MAX_INSNS) p->f[p->n] = (struct sock_filter){code, 0, 0, k};
  p->n++;
}

/* A conditional jump to labels jt (true) and jf (false); L_NEXT is the next instruction. */
static void jump(bpf_prog *p, uint16_t op, uint32_t k, uint8_t jt, uint8_t jf) {
  if (p->nfix < MAX_FIXUPS) p->fix[p->nfix++] = (struct bpf_fix){p->n, jt, jf};
  emit(p, BPF_JMP | op | BPF_K, k);
}

static void ret(bpf_prog *p, uint32_t action) {
  emit(p, BPF_RET | BPF_K, action);
}

#define ARG_LO(i) (offsetof(struct seccomp_data, args) + (i) * sizeof(uint64_t))
#define RET_ERRNO(e) (SECCOMP_RET_ERRNO | ((e)&SECCOMP_RET_DATA))

/* Lays out: the arch check; x32 refused; each denied call -> DENY; open/openat with write flags
 * -> DENY; clone without CLONE_THREAD (a new process) -> DENY; clone3 -> ENOSYS (libc then
 * falls back to clone); everything else -> ALLOW. Returns 0, or -1 if a jump is too long. */
static int build_filter(bpf_prog *p) {
  memset(p, 0, sizeof *p);
  emit(p, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
  p->f[p->n] = (struct sock_filter){BPF_JMP | BPF_JEQ | BPF_K, 1, 0, KEVO_AUDIT_ARCH};
  p->n++;
  ret(p, SECCOMP_RET_KILL_PROCESS);
  emit(p, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
  jump(p, BPF_JGE, 0x40000000, L_DENY, L_NEXT); /* x32 numbering: refused whole */
#endif
  for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++)
    jump(p, BPF_JEQ, (uint32_t)denied[i], L_DENY, L_NEXT);
#ifdef __NR_open
  jump(p, BPF_JEQ, __NR_open, L_OPEN, L_NEXT);
#endif
  jump(p, BPF_JEQ, __NR_openat, L_OPENAT, L_NEXT);
  jump(p, BPF_JEQ, __NR_clone, L_CLONE, L_NEXT);
  jump(p, BPF_JEQ, __NR_clone3, L_NOSYS, L_ALLOW);
  p->label[L_OPEN] = p->n;
#ifdef __NR_open
  emit(p, BPF_LD | BPF_W | BPF_ABS, ARG_LO(1)); /* open(path, flags) */
  jump(p, BPF_JSET, OPEN_WRITE_FLAGS, L_DENY, L_ALLOW);
#endif
  p->label[L_OPENAT] = p->n;
  emit(p, BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)); /* openat(dir, path, flags) */
  jump(p, BPF_JSET, OPEN_WRITE_FLAGS, L_DENY, L_ALLOW);
  p->label[L_CLONE] = p->n;
  emit(p, BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)); /* clone(flags, ...) */
  jump(p, BPF_JSET, CLONE_THREAD, L_ALLOW, L_DENY);
  p->label[L_ALLOW] = p->n;
  ret(p, SECCOMP_RET_ALLOW);
  p->label[L_DENY] = p->n;
  ret(p, RET_ERRNO(EPERM));
  p->label[L_NOSYS] = p->n;
  ret(p, RET_ERRNO(ENOSYS));
  if (p->n > MAX_INSNS || p->nfix >= MAX_FIXUPS) return -1;
  for (unsigned i = 0; i < p->nfix; i++) {
    unsigned at = p->fix[i].at;
    unsigned t[2] = {p->fix[i].jt, p->fix[i].jf};
    uint8_t off[2];
    for (int j = 0; j < 2; j++) {
      unsigned dest = t[j] == L_NEXT ? at + 1 : p->label[t[j]];
      if (dest <= at || dest - at - 1 > 255) return -1;
      off[j] = (uint8_t)(dest - at - 1);
    }
    p->f[at].jt = off[0];
    p->f[at].jf = off[1];
  }
  return 0;
}

static int limit(int resource, rlim_t value, const char *what, kevo_error *err) {
  struct rlimit rl = {value, value}, cur;
  if (getrlimit(resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY && value > cur.rlim_max)
    rl.rlim_cur = rl.rlim_max = cur.rlim_max;
  if (setrlimit(resource, &rl) != 0)
    return kevo_fail(err, KEVO_E_SANDBOX, "setrlimit %s: %s", what, strerror(errno));
  return KEVO_OK;
}

int kevo_confine(const kevo_confine_opts *o, int *landlock_abi, char *note, size_t note_len,
                 kevo_error *err) {
  int abi = 0, rc;
  if (landlock_abi) *landlock_abi = 0;
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
    return kevo_fail(err, KEVO_E_SANDBOX, "PR_SET_PDEATHSIG: %s", strerror(errno));
  if (prctl(PR_SET_DUMPABLE, 0) != 0)
    return kevo_fail(err, KEVO_E_SANDBOX, "PR_SET_DUMPABLE: %s", strerror(errno));
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return kevo_fail(err, KEVO_E_SANDBOX, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));

  abi = kevo_landlock_abi();
  if (abi > 0) {
    if ((rc = landlock_nothing(abi, err))) return rc;
  } else if (o->require_landlock) {
    return kevo_fail(err, KEVO_E_SANDBOX, "this kernel has no Landlock");
  }
  if (landlock_abi) *landlock_abi = abi;

  if (o->cpu_s && (rc = limit(RLIMIT_CPU, o->cpu_s, "RLIMIT_CPU", err))) return rc;
  if (!KEVO_SANITIZED && o->as_bytes && (rc = limit(RLIMIT_AS, o->as_bytes, "RLIMIT_AS", err)))
    return rc;
  if ((rc = limit(RLIMIT_FSIZE, 0, "RLIMIT_FSIZE", err))) return rc;
  if ((rc = limit(RLIMIT_CORE, 0, "RLIMIT_CORE", err))) return rc;
  if (o->max_fds && (rc = limit(RLIMIT_NOFILE, o->max_fds, "RLIMIT_NOFILE", err))) return rc;

  static bpf_prog prog; /* static: 1.3 KiB, and this runs once */
  if (build_filter(&prog) != 0)
    return kevo_fail(err, KEVO_E_SANDBOX, "the seccomp filter does not fit classic BPF");
  struct sock_fprog fprog = {.len = (unsigned short)prog.n, .filter = prog.f};
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0 &&
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) != 0)
    return kevo_fail(err, KEVO_E_SANDBOX, "seccomp: %s", strerror(errno));

  if (note) {
    if (abi > 0)
      snprintf(note, note_len, "confined: Landlock ABI %d (no file access%s), seccomp, rlimits",
               abi,
               abi >= 6   ? ", no TCP, no signals out"
               : abi >= 4 ? ", no TCP"
                          : "");
    else
      snprintf(note, note_len,
               "this kernel has no Landlock: the strategy process is confined by seccomp (no "
               "sockets, exec or open for writing) and rlimits only; it could read files");
  }
  return KEVO_OK;
}
