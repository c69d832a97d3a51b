"""The operating-system wall around one Triton compile (kevo's compile server, python/).

A candidate is Python written by a language model, and Triton runs Python it meets in a kernel
at compile time, so kevo assumes the candidate runs code and contains the process that compiles
it. The compile server (triton_server.py) is a zygote: it imports Triton once, never runs a
candidate's code itself, and forks one disposable child per compile. The child calls
confine() before it reads a byte of the candidate's source. From then on it:

- is in its own session, with no controlling terminal (setsid), and dies with the zygote;
- holds no file descriptor but its result pipe (stdin, stdout, stderr are /dev/null), and has
  an empty environment;
- runs as the zygote's unprivileged user (kevo drops root to nobody before the zygote starts);
- has resource limits: address space (kevo derives it from the machine's RAM), CPU seconds
  (the compile's deadline), file size, open files, no core dumps, no locked memory;
- is under Landlock with every access right the running kernel knows handled: it may read
  (never write, execute, truncate, make, link, rename or ioctl) beneath the paths Triton needs
  (the interpreter's prefixes, the Triton package, sys.path) and nothing else, may not use TCP,
  and may not signal or reach abstract sockets outside its own domain;
- is under a seccomp filter: no execve, no new processes (only threads), no sockets, no
  ptrace or cross-process memory access, no chmod/chown/utime/xattr, no mknod, no terminal
  ioctls, no mount, namespaces, keyrings, bpf, perf, io_uring or module loading.

It therefore stops at PTX: turning PTX into a cubin needs ptxas, an exec, which the zygote does
(trusted code; ptxas reads PTX, which is data). Nothing a child does survives it: the zygote
waits for it, and no state of it flows back but its result message.

Linux only, x86_64 and aarch64; on anything else (or when seccomp is unavailable) confine()
raises, and the compile is refused. A kernel without Landlock gets everything but Landlock
(triton.sandbox() says so).
"""

import ctypes
import fcntl
import os
import resource
import signal
import struct
import sys

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                        ctypes.c_ulong]

PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP = 1, 38, 22
SECCOMP_MODE_FILTER = 2

# --- Landlock (the kernel's UAPI values) -------------------------------------------------------

NR_LANDLOCK_CREATE, NR_LANDLOCK_ADD_RULE, NR_LANDLOCK_RESTRICT = 444, 445, 446
LL_FS_EXECUTE, LL_FS_WRITE_FILE, LL_FS_READ_FILE, LL_FS_READ_DIR = 1, 2, 4, 8
LL_FS_ABI1 = (1 << 13) - 1  # execute .. make_sym
LL_FS_REFER, LL_FS_TRUNCATE, LL_FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
LL_NET_BIND_TCP, LL_NET_CONNECT_TCP = 1, 2
LL_SCOPE_ABSTRACT_UNIX, LL_SCOPE_SIGNAL = 1, 2


def landlock_abi():
    """The Landlock ABI the kernel offers; 0 when none."""
    abi = _libc.syscall(NR_LANDLOCK_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(int(abi), 0)


def landlock_rights(abi):
    """(filesystem, network, scope) rights that ABI knows: all of them are handled."""
    fs = LL_FS_ABI1
    if abi >= 2:
        fs |= LL_FS_REFER
    if abi >= 3:
        fs |= LL_FS_TRUNCATE
    if abi >= 5:
        fs |= LL_FS_IOCTL_DEV
    net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP if abi >= 4 else 0
    scope = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL if abi >= 6 else 0
    return fs, net, scope


def landlock_restrict(abi, read_paths, exec_paths=(), write_paths=()):
    """Restricts this process (and what it forks) to reading beneath read_paths, executing
    exec_paths (files or directories) and writing beneath write_paths. Every right the ABI
    knows is handled, so what is not granted here is denied. Raises OSError."""
    fs, net, scope = landlock_rights(abi)
    if abi >= 6:
        attr = struct.pack("QQQ", fs, net, scope)
    elif abi >= 4:
        attr = struct.pack("QQ", fs, net)
    else:
        attr = struct.pack("Q", fs)
    buf = ctypes.create_string_buffer(attr, len(attr))
    rs = _libc.syscall(NR_LANDLOCK_CREATE, buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if rs < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        read = LL_FS_READ_FILE | LL_FS_READ_DIR
        write = fs & ~(LL_FS_EXECUTE | LL_FS_IOCTL_DEV)
        grants = {}
        for paths, rights in ((read_paths, read), (exec_paths, read | LL_FS_EXECUTE),
                              (write_paths, read | write)):
            for p in paths:
                if p and os.path.exists(p):
                    grants[os.path.realpath(p)] = grants.get(os.path.realpath(p), 0) | rights
        for path, rights in sorted(grants.items()):
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                if not os.path.isdir(path):  # a file takes only file rights
                    rights &= LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | \
                        LL_FS_TRUNCATE | LL_FS_IOCTL_DEV
                rule = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)
                if _libc.syscall(NR_LANDLOCK_ADD_RULE, ctypes.c_int(rs), ctypes.c_int(1), rule,
                                 ctypes.c_uint32(0)) != 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
            finally:
                os.close(fd)
        if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
        if _libc.syscall(NR_LANDLOCK_RESTRICT, ctypes.c_int(rs), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(rs)


# --- seccomp ------------------------------------------------------------------------------------

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
# Denied with EPERM. Names absent from an architecture's table do not exist there.
DENY = ("execve", "execveat", "fork", "vfork", "ptrace", "process_vm_readv", "process_vm_writev",
        "socket", "socketpair", "bind", "listen", "accept", "accept4", "connect",
        "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
        "setxattr", "lsetxattr", "fsetxattr", "setxattrat", "removexattr", "lremovexattr",
        "fremovexattr", "removexattrat", "utime", "utimes", "utimensat", "futimesat",
        "mknod", "mknodat", "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
        "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
        "io_uring_setup", "io_uring_enter", "io_uring_register", "kexec_load", "init_module",
        "finit_module", "delete_module", "acct", "reboot", "syslog", "name_to_handle_at",
        "open_by_handle_at", "kcmp", "pidfd_getfd", "fsopen", "fsconfig", "fsmount", "fspick",
        "open_tree", "move_mount", "mount_setattr", "swapon", "swapoff", "setuid", "setgid",
        "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "personality",
        "process_madvise", "quotactl",
        # objects that outlive the process (and memory not under RLIMIT_AS): SysV IPC, POSIX
        # message queues
        "shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semctl", "semtimedop",
        "msgget", "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend",
        "mq_timedreceive", "mq_notify", "mq_getsetattr",
        # acting on another process of the same user (the server, kevo when it is unprivileged)
        "tkill", "pidfd_send_signal", "ioprio_set", "migrate_pages", "move_pages")
# Allowed only on this process itself: (name, [(argument, allowed values), ...]): every argument
# listed must hold one of its values (the low 32 bits; "self" is the compile process's pid). Else
# EPERM.
SELF_ONLY = (("prlimit64", [(0, [0])]), ("setpriority", [(0, [0]), (1, [0])]),
             ("sched_setaffinity", [(0, [0, "self"])]), ("sched_setscheduler", [(0, [0, "self"])]),
             ("sched_setparam", [(0, [0, "self"])]), ("sched_setattr", [(0, [0, "self"])]),
             ("kill", [(0, [0, "self"])]), ("tgkill", [(0, ["self"])]),
             ("rt_sigqueueinfo", [(0, ["self"])]), ("rt_tgsigqueueinfo", [(0, ["self"])]))
SYSCALLS = {
    "x86_64": dict(
        ioctl=16, clone=56, clone3=435, execve=59, execveat=322, fork=57, vfork=58, ptrace=101,
        process_vm_readv=310, process_vm_writev=311, socket=41, socketpair=53, bind=49,
        listen=50, accept=43, accept4=288, connect=42, chmod=90, fchmod=91, fchmodat=268,
        fchmodat2=452, chown=92, fchown=93, lchown=94, fchownat=260, setxattr=188,
        lsetxattr=189, fsetxattr=190, setxattrat=463, removexattr=197, lremovexattr=198,
        fremovexattr=199, removexattrat=466, utime=132, utimes=235, utimensat=280,
        futimesat=261, mknod=133, mknodat=259, mount=165, umount2=166, pivot_root=155,
        chroot=161, unshare=272, setns=308, keyctl=250, add_key=248, request_key=249, bpf=321,
        perf_event_open=298, userfaultfd=323, io_uring_setup=425, io_uring_enter=426,
        io_uring_register=427, kexec_load=246, init_module=175, finit_module=313,
        delete_module=176, acct=163, reboot=169, syslog=103, name_to_handle_at=303,
        open_by_handle_at=304, kcmp=312, pidfd_getfd=438, fsopen=430, fsconfig=431,
        fsmount=432, fspick=433, open_tree=428, move_mount=429, mount_setattr=442, swapon=167,
        swapoff=168, setuid=105, setgid=106, setreuid=113, setregid=114, setresuid=117,
        setresgid=119, setgroups=116, personality=135, process_madvise=440, quotactl=179,
        prctl=157, prlimit64=302, setpriority=141, sched_setparam=142, sched_setscheduler=144,
        sched_setaffinity=203, sched_setattr=314, kill=62, tkill=200, tgkill=234,
        rt_sigqueueinfo=129, rt_tgsigqueueinfo=297, pidfd_send_signal=424, ioprio_set=251,
        migrate_pages=256, move_pages=279, shmget=29, shmat=30, shmctl=31, shmdt=67, semget=64,
        semop=65, semctl=66, semtimedop=220, msgget=68, msgsnd=69, msgrcv=70, msgctl=71,
        mq_open=240, mq_unlink=241, mq_timedsend=242, mq_timedreceive=243, mq_notify=244,
        mq_getsetattr=245),
    "aarch64": dict(
        ioctl=29, clone=220, clone3=435, execve=221, execveat=281, ptrace=117,
        process_vm_readv=270, process_vm_writev=271, socket=198, socketpair=199, bind=200,
        listen=201, accept=202, accept4=242, connect=203, fchmod=52, fchmodat=53,
        fchmodat2=452, fchown=55, fchownat=54, setxattr=5, lsetxattr=6, fsetxattr=7,
        setxattrat=463, removexattr=14, lremovexattr=15, fremovexattr=16, removexattrat=466,
        utimensat=88, mknodat=33, mount=40, umount2=39, pivot_root=41, chroot=51, unshare=97,
        setns=268, keyctl=219, add_key=217, request_key=218, bpf=280, perf_event_open=241,
        userfaultfd=282, io_uring_setup=425, io_uring_enter=426, io_uring_register=427,
        kexec_load=104, init_module=105, finit_module=273, delete_module=106, acct=89,
        reboot=142, syslog=116, name_to_handle_at=264, open_by_handle_at=265, kcmp=272,
        pidfd_getfd=438, fsopen=430, fsconfig=431, fsmount=432, fspick=433, open_tree=428,
        move_mount=429, mount_setattr=442, swapon=224, swapoff=225, setuid=146, setgid=144,
        setreuid=145, setregid=143, setresuid=147, setresgid=149, setgroups=159,
        personality=92, process_madvise=440, quotactl=60,
        prctl=167, prlimit64=261, setpriority=140, sched_setparam=118, sched_setscheduler=119,
        sched_setaffinity=122, sched_setattr=274, kill=129, tkill=130, tgkill=131,
        rt_sigqueueinfo=138, rt_tgsigqueueinfo=240, pidfd_send_signal=424, ioprio_set=30,
        migrate_pages=238, move_pages=239, shmget=194, shmat=196, shmctl=195, shmdt=197,
        semget=190, semop=193, semctl=191, semtimedop=192, msgget=186, msgsnd=189, msgrcv=188,
        msgctl=187, mq_open=180, mq_unlink=181, mq_timedsend=182, mq_timedreceive=183,
        mq_notify=184, mq_getsetattr=185),
}
CLONE_THREAD = 0x00010000
EPERM, ENOTTY, ENOSYS = 1, 25, 38
RET_ALLOW, RET_ERRNO, RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
LD_W_ABS, JEQ_K, JSET_K, AND_K, RET_K = 0x20, 0x15, 0x45, 0x54, 0x06


def self_only(nr, checks, pid):
    """BPF for one SELF_ONLY syscall: when the call is nr, EPERM unless every (argument, values)
    check holds; other calls go on past the block."""
    body = []
    for arg, values in checks:
        values = [pid if v == "self" else v for v in values]
        body.append((LD_W_ABS, 0, 0, 16 + 8 * arg))  # seccomp_data.args[arg], low word
        body += [(JEQ_K, len(values) - i, 0, v) for i, v in enumerate(values)]
        body.append((RET_K, 0, 0, RET_ERRNO | EPERM))
    body.append((RET_K, 0, 0, RET_ALLOW))
    return [(JEQ_K, 0, len(body), nr)] + body


def seccomp_program(machine, pid):
    """The BPF program (a list of (code, jt, jf, k)) for this architecture and the compile
    process's pid."""
    nr = SYSCALLS[machine]
    prog = [(LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
            (JEQ_K, 1, 0, AUDIT_ARCH[machine]), (RET_K, 0, 0, RET_KILL_PROCESS),
            (LD_W_ABS, 0, 0, 0)]  # seccomp_data.nr
    if machine == "x86_64":  # the x32 ABI's numbers have bit 30 set: none of them
        prog += [(JSET_K, 0, 1, 0x40000000), (RET_K, 0, 0, RET_ERRNO | EPERM)]
    for name in DENY:
        if name in nr:
            prog += [(JEQ_K, 0, 1, nr[name]), (RET_K, 0, 0, RET_ERRNO | EPERM)]
    # clone3 passes its flags in memory a filter cannot read: ENOSYS makes libc use clone.
    prog += [(JEQ_K, 0, 1, nr["clone3"]), (RET_K, 0, 0, RET_ERRNO | ENOSYS)]
    # clone: threads only (flags are argument 0, its low word at offset 16 on little-endian).
    prog += [(JEQ_K, 0, 4, nr["clone"]), (LD_W_ABS, 0, 0, 16), (JSET_K, 1, 0, CLONE_THREAD),
             (RET_K, 0, 0, RET_ERRNO | EPERM), (RET_K, 0, 0, RET_ALLOW)]
    # prctl: anything but clearing the parent-death signal (PR_SET_PDEATHSIG, option 1):
    # without it, killing kevo and the server would leave this process alive.
    prog += [(JEQ_K, 0, 4, nr["prctl"]), (LD_W_ABS, 0, 0, 16),
             (JEQ_K, 0, 1, PR_SET_PDEATHSIG), (RET_K, 0, 0, RET_ERRNO | EPERM),
             (LD_W_ABS, 0, 0, 0)]  # seccomp_data.nr again for what follows
    for name, checks in SELF_ONLY:
        prog += self_only(nr[name], checks, pid)
    # ioctl: no terminal requests (0x54xx: TIOCSTI, TIOCLINUX, TIOCSCTTY, ...).
    prog += [(JEQ_K, 0, 4, nr["ioctl"]), (LD_W_ABS, 0, 0, 24), (AND_K, 0, 0, 0xFFFFFF00),
             (JEQ_K, 0, 1, 0x5400), (RET_K, 0, 0, RET_ERRNO | ENOTTY)]
    prog += [(RET_K, 0, 0, RET_ALLOW)]
    return prog


def seccomp_install(machine):
    prog = seccomp_program(machine, os.getpid())
    raw = b"".join(struct.pack("=HBBI", *ins) for ins in prog)
    filt = ctypes.create_string_buffer(raw, len(raw))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(prog), ctypes.cast(filt, ctypes.c_void_p))
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "seccomp")


# --- the whole wall -----------------------------------------------------------------------------


# What no grant may contain: a prefix or sys.path entry that is one of these or above one (an
# interpreter built for "/", a .pth naming "/home") would open them all to the candidate.
NEVER_READ = ("/proc", "/sys", "/dev", "/etc", "/root", "/home", "/run", "/tmp", "/var", "/boot")


def read_paths():
    """What a compile reads: the interpreter's prefixes, sys.path, the Triton package; never a
    directory at or above one of NEVER_READ."""
    import triton
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.dirname(triton.__file__))}
    paths.update(p for p in sys.path if p)
    keep = set()
    for p in paths:
        real = os.path.realpath(p)
        if os.path.isdir(real) and not any(n == real or n.startswith(real.rstrip("/") + "/")
                                           for n in NEVER_READ):
            keep.add(real)
    return sorted(keep)


def confine(keep_fds, zygote_pid, limits, paths, abi):
    """Walls this (freshly forked) process in; keep_fds (its request and result pipes) are its
    only fds past stdio, moved to 3, 4, ... in order (the new numbers are returned). limits:
    {"as_bytes", "cpu_s", "fsize_bytes", "nofile"}. Raises on any failure: the caller then
    refuses the compile rather than compiling unconfined."""
    machine = os.uname().machine
    if machine not in SYSCALLS:
        raise OSError(0, f"no seccomp filter for {machine}: compiles are refused here")
    os.setsid()
    if _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != zygote_pid:
        os._exit(125)  # the zygote is gone already
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 64) for fd in keep_fds]  # clear of 3, 4, ...
    keep = [os.dup2(fd, 3 + i, inheritable=False) for i, fd in enumerate(high)]
    os.closerange(3 + len(keep), 1 << 16)
    os.environ.clear()
    for res, value in ((resource.RLIMIT_AS, limits.get("as_bytes")),
                       (resource.RLIMIT_CPU, limits.get("cpu_s")),
                       (resource.RLIMIT_FSIZE, limits.get("fsize_bytes", 1 << 20)),
                       (resource.RLIMIT_NOFILE, limits.get("nofile", 256)),
                       (resource.RLIMIT_CORE, 0), (resource.RLIMIT_MEMLOCK, 0),
                       (resource.RLIMIT_MSGQUEUE, 0)):
        if value is not None:
            resource.setrlimit(res, (int(value), int(value)))
    if abi >= 1:  # without it (old kernel, off at boot) the rest still holds; kevo says so
        landlock_restrict(abi, paths)
    seccomp_install(machine)
    return keep
