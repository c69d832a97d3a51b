"""A python that has already imported torch, for sweeping many KernelBench problems
(bench/kb_sweep.py). Starting python and importing torch takes 2-4 s, more than most small
problems' whole import; a sweep of 250 problems would spend most of its GPU time there.

  kb_zygote.py serve SOCKET [--bare] [MODULE...]
                                          imports torch and MODULEs (--bare: only MODULEs),
                                          never touches CUDA,
                                          then forks one child per request on SOCKET
  kb_zygote.py client SOCKET PATH         writes PATH: an executable stand-in for python
                                          (give it as KEVO_PYTHON) that runs its script in
                                          such a child

kevo starts its bridge as `python SCRIPT MODE PROBLEM` with stdin, stdout and stderr of its
own and a scrubbed environment. The stand-in sends the zygote its argv, working directory,
environment and those three descriptors (SCM_RIGHTS); the zygote forks, the child takes them
over (CUDA_VISIBLE_DEVICES included: CUDA starts in the child, after the fork) and runs SCRIPT
as __main__; its exit status comes back to the stand-in, which exits with it. When the
stand-in dies (kevo kills its bridge on a deadline) the child is killed. A bench tool only:
kevo itself always starts a fresh python.
"""
import array
import json
import os
import selectors
import signal
import socket
import stat
import struct
import sys

CLIENT = r'''#!%(python)s -S
import array, json, os, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(%(sock)r)
except OSError as e:
    sys.stderr.write("kb_zygote: no zygote at %(sock)s: %%s\n" %% e)
    sys.exit(1)
msg = json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
s.sendmsg([struct.pack("<I", len(msg)) + msg],
          [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
got = b""
while len(got) < 4:
    c = s.recv(4 - len(got))
    if not c:
        sys.stderr.write("kb_zygote: the zygote went away\n")
        sys.exit(1)
    got += c
sys.exit(struct.unpack("<i", got)[0])
'''


def write_client(sock, path):
    with open(path, "w") as f:
        f.write(CLIENT % {"python": sys.executable, "sock": os.path.abspath(sock)})
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def recv_request(conn):
    """(request dict, [fd, fd, fd]) or (None, None)."""
    fds = array.array("i")
    data, anc, _, _ = conn.recvmsg(1 << 20, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    if len(data) < 4:
        return None, list(fds)
    (n,) = struct.unpack("<I", data[:4])
    body = data[4:]
    while len(body) < n:
        c = conn.recv(n - len(body))
        if not c:
            return None, list(fds)
        body += c
    return json.loads(body), list(fds)


def child(req, fds):
    """In the forked child: become the requested python process. Never returns."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        try:  # die with the zygote
            import ctypes
            ctypes.CDLL(None).prctl(1, signal.SIGKILL)
        except Exception:
            pass
        for i, fd in enumerate(fds[:3]):
            os.dup2(fd, i)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        sys.argv = list(req["argv"][1:])
        sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
        import runpy
        try:
            runpy.run_path(sys.argv[0], run_name="__main__")
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException as e:  # report like python would, then the status
        try:
            import traceback
            traceback.print_exc()
        except Exception:
            sys.stderr.write("%s\n" % e)
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        os._exit(code)


def serve(sock, modules):
    import importlib
    preload = ["torch", "torch.nn", "torch.nn.functional", "torch.utils.flop_counter"]
    if modules[:1] == ["--bare"]:  # tests on a host without torch
        preload, modules = [], modules[1:]
    for m in preload + modules:
        try:
            importlib.import_module(m)
        except ImportError as e:
            sys.stderr.write("kb_zygote: cannot import %s: %s\n" % (m, e))
            if m == "torch":
                return 3
    try:
        os.unlink(sock)
    except FileNotFoundError:
        pass
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lsock.bind(sock)
    lsock.listen(64)
    sel = selectors.DefaultSelector()
    sel.register(lsock, selectors.EVENT_READ)
    kids = {}  # pid -> connection of its stand-in
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sys.stderr.write("kb_zygote: ready on %s (pid %d)\n" % (sock, os.getpid()))
    sys.stderr.flush()
    try:
        while True:
            for key, _ in sel.select(timeout=0.05):
                if key.fileobj is lsock:
                    conn, _ = lsock.accept()
                    try:
                        req, fds = recv_request(conn)
                    except (OSError, ValueError):
                        req, fds = None, []
                    if req is None:
                        for fd in fds:
                            os.close(fd)
                        conn.close()
                        continue
                    sys.stdout.flush()
                    sys.stderr.flush()
                    pid = os.fork()
                    if pid == 0:
                        lsock.close()
                        for c in kids.values():
                            c.close()
                        conn.close()
                        child(req, fds)
                    for fd in fds:
                        os.close(fd)
                    # who is who, for a sweep that samples each process's GPU memory
                    sys.stderr.write("kb_zygote: child %d: %s\n" % (
                        pid, " ".join(str(x) for x in req.get("argv", [])[1:])[:400]))
                    sys.stderr.flush()
                    kids[pid] = conn
                    sel.register(conn, selectors.EVENT_READ, pid)
                else:  # a stand-in closed its end: it died, its child goes too
                    pid = key.data
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            while kids:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                conn = kids.pop(pid, None)
                if conn is None:
                    continue
                code = os.waitstatus_to_exitcode(status)
                if code < 0:
                    code = 128 - code
                sel.unregister(conn)
                try:
                    conn.sendall(struct.pack("<i", code))
                except OSError:
                    pass
                conn.close()
    finally:
        for pid in kids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.unlink(sock)
        except OSError:
            pass


def main(argv):
    if len(argv) >= 3 and argv[1] == "serve":
        return serve(argv[2], argv[3:])
    if len(argv) == 4 and argv[1] == "client":
        write_client(argv[2], argv[3])
        return 0
    sys.stderr.write("usage: kb_zygote.py serve SOCKET [MODULE...] | client SOCKET PATH\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
