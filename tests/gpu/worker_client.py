"""A small client of `kevo worker` (docs/architecture.md "Evaluator worker protocol").

Frames: u32 little-endian header length, the JSON header, then the blobs it announces in
"blobs": [sizes]. Used by tests/gpu/test_worker.sh and tests/integration/test_worker.py.
"""
import json
import os
import select
import struct
import subprocess


class WorkerError(Exception):
    pass


class Worker:
    def __init__(self, kevo, env=None):
        self.proc = subprocess.Popen(
            [kevo, "worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if env and env.get("_CAPTURE_STDERR") else None,
            env=env)
        self.next_id = 1

    def send(self, header, blobs=()):
        header = dict(header)
        header["blobs"] = [len(b) for b in blobs]
        if "id" not in header:
            header["id"] = self.next_id
            self.next_id += 1
        text = json.dumps(header).encode()
        self.proc.stdin.write(struct.pack("<I", len(text)) + text + b"".join(blobs))
        self.proc.stdin.flush()
        return header["id"]

    def _read(self, n, timeout):
        out = b""
        fd = self.proc.stdout.fileno()
        while len(out) < n:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                raise WorkerError("no reply within %ss" % timeout)
            chunk = os.read(fd, n - len(out))
            if not chunk:
                raise WorkerError("the worker closed its stdout (exit %s)" % self.proc.poll())
            out += chunk
        return out

    def recv(self, timeout=120):
        (n,) = struct.unpack("<I", self._read(4, timeout))
        header = json.loads(self._read(n, timeout))
        for size in header.get("blobs", []):
            self._read(size, timeout)
        return header

    def call(self, header, blobs=(), timeout=120):
        rid = self.send(header, blobs)
        reply = self.recv(timeout)
        if reply.get("id") != rid:
            raise WorkerError("reply id %r for request %r" % (reply.get("id"), rid))
        return reply

    def close(self, timeout=30):
        try:
            self.call({"op": "bye"}, timeout=timeout)
        except (WorkerError, BrokenPipeError):
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def wait(self, timeout=30):
        return self.proc.wait(timeout)


def plan(module, name, grid, block, args, shared=0, scratch=None):
    """One-kernel launch plan in the worker's JSON form."""
    p = {"kernels": [{"module": module, "name": name, "grid": list(grid), "block": list(block),
                      "shared": shared, "args": args}]}
    if scratch:
        p["scratch"] = scratch
    return p
