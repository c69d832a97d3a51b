"""kevo's Triton compile server: a zygote that forks one confined process per compile.

kevo starts this file (written out of the kevo binary, with triton_check.py and
triton_sandbox.py beside it, into a private directory) in its own session, with a short
environment, under resource limits and Landlock (runtime/triton_spawn.c). It imports Triton
once, compiles a small kernel to warm up, becomes an unprivileged user if it was started as
root, says hello, and answers compile requests until its input closes.

A candidate is code (Triton runs Python it meets in a kernel at compile time), so this process
never runs any of it. For each request it forks a child, which walls itself in
(triton_sandbox.confine: own session, no fds but a result pipe, no environment, rlimits,
Landlock, seccomp without exec) before it reads the source; the child parses the source once,
checks that tree (triton_check), runs it, makes sure the kernel Triton will compile is that
tree (not text Triton re-read from elsewhere), runs Triton's stages up to PTX and sends the PTX
and the stages' metadata back. The zygote checks that metadata, turns the PTX into a cubin with
ptxas (an exec the child may not do; ptxas reads PTX, which is data), and replies. The child is
reaped before the reply: no process and no state outlives a compile.

Wire format (the same frames as kevo's evaluator worker, runtime/proto.h): a u32
little-endian length, a JSON header, then the blobs the header announces in "blobs". Requests
arrive on fd 3, replies leave on fd 4; fds 0-2 are not the protocol, so a stray print or
ptxas's output cannot corrupt a frame.
"""

import ast
import json
import gc
import linecache
import os
import re
import resource
import select
import signal
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton_check  # noqa: E402
import triton_sandbox  # noqa: E402
from triton_check import Rejected  # noqa: E402

PROTO_IN, PROTO_OUT = 3, 4
MAX_HEADER = 16 << 20
MAX_PTX = 64 << 20  # what a child may send back
MAX_MESSAGE = 2000  # a diagnostic's length, as the model will read it
PHASE_NAMES = ("fork", "ready", "handoff", "check", "ast_to_ir", "ttir", "ttgir", "llir", "ptx",
               "child", "ptxas", "reap", "warm", "warm_cut")  # info.phases (Phases); warm and
# warm_cut describe the compile process's own warm-up before its request (off the critical path)
# What str.splitlines (so linecache, so Triton) takes for a line break and the parser does not
ODD_BREAKS = re.compile("[\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
SOURCE_NAME = "kevo-candidate:"  # code objects' file name: no file on disk, only linecache

# The warm-up kernel touches what kernels commonly pull in lazily: a reduction (Triton's own JIT
# functions) and libdevice (a file read while linking).
WARMUP_SRC = '''import triton
import triton.language as tl


@triton.jit
def kevo_warmup(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    y = tl.extra.cuda.libdevice.erf(x) * tl.max(x, axis=0)
    tl.store(x_ptr + offs, y, mask=offs < n)
'''
WARMUP_REQ = {"src": WARMUP_SRC, "kernel": "kevo_warmup", "signature": ["*fp32", "i32"],
              "constexprs": {"BLOCK": 128}, "filename": "warmup.py", "timeout": 120}

# What a compile process compiles (to PTX) of its own, walled in, while it waits for its request:
# a fresh fork shares its pages with the server until it writes them, and a compile writes some
# two thousand of them (reference counts of Triton's objects, LLVM's and MLIR's state), each a
# page fault and a copy in the middle of the candidate's compile. Compiling a kernel of kevo's
# own first takes those faults ahead of the request. The kernel covers what kernels commonly
# use: a loop, a mask, exp, where, a max and a sum.
PREFAULT_SRC = '''import triton
import triton.language as tl


@triton.jit
def kevo_prefault(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0).to(tl.float32)
        acc = tl.maximum(acc, tl.where(x > 0, tl.exp(x), x))
    tl.store(y_ptr + row, tl.sum(acc, axis=0) / tl.max(acc, axis=0))
'''
PREFAULT_REQ = {"src": PREFAULT_SRC, "kernel": "kevo_prefault",
                "signature": ["*fp32", "*fp32", "i32"], "constexprs": {"BLOCK": 256},
                "filename": "prefault.py", "timeout": 120}


class Interrupted(BaseException):
    """A compile process's own warm-up stops: its request has come (not an Exception, so that no
    handler of a compile turns it into a diagnostic)."""


def clip(text, n=MAX_MESSAGE):
    """A message for the model: printable, one paragraph, at most n characters."""
    text = "".join(c if c.isprintable() or c == "\n" else "?" for c in str(text)).strip()
    return text if len(text) <= n else text[:n - 15] + " ...(truncated)"


class Phases:
    """Where a compile's time goes: mark(name) records the milliseconds since the previous mark
    (bench/triton_compile.sh prints them; info.phases)."""

    def __init__(self):
        self.last, self.ms = time.monotonic(), {}
        self.t0 = self.last

    def start(self, t=None):
        self.last, self.ms = time.monotonic() if t is None else t, {}
        self.t0 = self.last

    def mark(self, name):
        t = time.monotonic()
        self.ms[name] = round(self.ms.get(name, 0.0) + (t - self.last) * 1000.0, 2)
        self.last = t


class Compiler:
    """Triton, imported; compiles to PTX in-process (the child) and PTX to cubin (the zygote)."""

    def __init__(self):
        import math
        import triton
        import triton.language as tl
        from triton._C.libtriton import ir
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        from triton.compiler.compiler import make_backend
        from triton.compiler.errors import CompilationError
        import triton.language.extra.cuda.libdevice  # noqa: F401 (reachable from kernels)
        self.triton, self.tl, self.ir = triton, tl, ir
        self.GPUTarget, self.ASTSource, self.make_backend = GPUTarget, ASTSource, make_backend
        self.CompilationError = CompilationError
        self.JITFunction = triton.runtime.jit.JITFunction
        self.policy = triton_check.Policy({"triton": triton, "triton.language": tl,
                                           "math": math})
        self.count = 0
        self.unchecked = False
        self.phases = Phases()
        self.context = None  # an MLIR context made ahead of the request (prepare)
        self.poll = None  # called between stages (a compile process's warm-up: Interrupted)
        self.triton_dir = os.path.dirname(os.path.abspath(triton.__file__)) + os.sep

    # --- in the child: source -> PTX ------------------------------------------------------

    def load(self, src, filename):
        """Parses and checks the source once, runs that tree's top level, and returns its
        namespace and the checked functions. Triton re-reads a kernel's text (from the first
        line that looks like `def name(`); the kernels it will compile are compared with the
        checked tree, and a difference is refused."""
        if self.unchecked:  # tests of the OS wall alone (triton.configure{allowlist = false})
            tree = ast.parse(src, filename=filename)
        else:
            tree = triton_check.check_source(src, filename, self.policy)
        self.count += 1
        path = f"{SOURCE_NAME}{filename}"
        linecache.cache[path] = (len(src), None, src.splitlines(True), path)
        builtins = {k: __builtins__[k] if isinstance(__builtins__, dict) else getattr(
            __builtins__, k) for k in triton_check.SAFE_BUILTINS}
        builtins["__import__"] = self.restricted_import
        ns = {"__builtins__": builtins, "__name__": f"kevo_candidate_{self.count}"}
        exec(compile(tree, path, "exec"), ns)
        defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        lines = None
        for name, node in defs.items():
            fn = ns.get(name)
            if not isinstance(fn, self.JITFunction) or fn.fn.__code__.co_filename != path:
                raise Rejected(node.lineno, node.col_offset + 1,
                               f"'{name}' is not the @triton.jit function written here")
            # When the text Triton will parse is exactly the checked function's own lines (its
            # `def` at column 0 to its last line), it is the same tokens, so the same tree.
            # Only where the parser and linecache (str.splitlines) agree on what a line is (no
            # \r, \f, \v, \x1c-\x1e, \x85, \u2028, \u2029: with one, a line number could name
            # other text). Otherwise the trees are compared: exact, at a parse and two dumps.
            if lines is None:
                lines = [] if ODD_BREAKS.search(src) else src.splitlines(True)
            if node.col_offset == 0 and node.end_lineno <= len(lines) and \
                    lines[node.lineno - 1].startswith("def ") and \
                    fn.src == "".join(lines[node.lineno - 1:node.end_lineno]):
                continue
            try:
                seen = fn.parse().body[0]
            except Exception:
                seen = None
            if seen is None or ast.dump(seen) != triton_check.without_decorators(node):
                raise Rejected(node.lineno, node.col_offset + 1,
                               f"Triton would compile text other than the function '{name}' "
                               "that was checked (a 'def' hidden in a string before it?)")
        return ns, {n: d.lineno for n, d in defs.items()}

    def new_context(self, backend):
        context = self.ir.context()
        self.ir.load_dialects(context)
        backend.load_dialects(context)
        return context

    def prepare(self, arch):
        """In a compile process waiting for its request: the MLIR context with Triton's and the
        NVIDIA backend's dialects loaded (the same for every request), off the critical path."""
        m = re.fullmatch(r"sm_(\d+)a?", arch)
        try:
            if m and self.context is None:
                target = self.GPUTarget("cuda", int(m[1]), 32)
                self.context = self.new_context(self.make_backend(target))
        except Exception:  # the compile makes its own, as it would have anyway
            self.context = None

    def prefault(self, req_fd):
        """In a compile process walled in and waiting for its request: compiles kevo's own
        PREFAULT kernel to PTX (its own MLIR context; the prepared one stays for the request),
        so the pages a compile writes are copied now rather than during the candidate's
        compile. Stops between two stages as soon as the request is readable on req_fd.
        Returns (ms spent, whether it was cut short)."""
        t0 = time.monotonic()

        def poll():
            if select.select([req_fd], [], [], 0)[0]:
                raise Interrupted()

        saved, self.context = self.context, None
        cut = False
        self.poll = poll
        try:
            poll()
            self.to_ptx(PREFAULT_REQ)
        except Interrupted:
            cut = True
        except Exception:  # kevo's own kernel: the candidate's compile will say what is wrong
            pass
        finally:
            self.poll, self.context = None, saved
            linecache.clearcache()
        return (time.monotonic() - t0) * 1000.0, cut

    def restricted_import(self, name, globals=None, locals=None, fromlist=(), level=0):
        if level or name not in triton_check.ALLOWED_IMPORTS:
            raise ImportError(f"import of '{name}' is not allowed")
        mod = sys.modules[name]
        return mod if fromlist else sys.modules[name.split(".")[0]]

    def target(self, req):
        arch = str(req.get("arch") or "sm_90")
        m = re.fullmatch(r"sm_(\d+)a?", arch)
        cc = int(m.group(1)) if m else int(arch) if arch.isdigit() else 0
        if not 50 <= cc <= 200:
            raise Rejected(0, 0, f"unknown arch '{clip(arch, 32)}'")
        warps, stages = req.get("num_warps", 4), req.get("num_stages", 3)
        if type(warps) is not int or not 1 <= warps <= 32 or warps & (warps - 1):
            raise Rejected(0, 0, f"num_warps must be a power of two from 1 to 32, got "
                           f"'{clip(warps, 32)}'")
        if type(stages) is not int or not 1 <= stages <= 8:
            raise Rejected(0, 0, f"num_stages must be an integer from 1 to 8, got "
                           f"'{clip(stages, 32)}'")
        target = self.GPUTarget("cuda", cc, 32)
        backend = self.make_backend(target)
        options = backend.parse_options({"num_warps": warps, "num_stages": stages})
        return cc, target, backend, options

    def to_ptx(self, req):
        """Triton's stages up to PTX for the request's kernel. Returns (ptx, metadata, extra);
        raises Rejected."""
        filename = str(req.get("filename") or "candidate.py")[:200]
        kernel_name = req["kernel"]
        ns, def_lines = {}, {}
        mark = self.phases.mark
        try:
            ns, def_lines = self.load(req["src"], filename)
            mark("check")
            if self.poll is not None:
                self.poll()
            fn = ns.get(kernel_name)
            if not isinstance(fn, self.JITFunction):
                raise Rejected(0, 0, f"no @triton.jit function named '{clip(kernel_name, 64)}'")
            srcinfo = self.signature(fn, req)
            src = self.ASTSource(fn, srcinfo["signature"], srcinfo["constexprs"],
                                 srcinfo["attrs"])
            cc, target, backend, options = self.target(req)
            metadata = {"target": target, **options.__dict__}
            stages = {}
            backend.add_stages(stages, options, src.language)
            context, self.context = self.context, None  # one per compile
            if context is None:
                context = self.new_context(backend)
            module = src.make_ir(target, options, backend.get_codegen_implementation(options),
                                 backend.get_module_map(), context)
            mark("ast_to_ir")
            for ext in ("ttir", "ttgir", "llir", "ptx"):
                if self.poll is not None:
                    self.poll()
                module = stages[ext](module, metadata)
                mark(ext)
        except Rejected:
            raise
        except Exception as e:
            raise self.diagnose(e, ns, def_lines)
        keep = ("name", "shared", "num_warps", "tmem_size", "global_scratch_size",
                "global_scratch_align", "profile_scratch_size", "profile_scratch_align")
        md = {k: metadata.get(k) for k in keep}
        return module, md, {"params": srcinfo["params"], "constexprs": srcinfo["constexprs"]}

    def signature(self, fn, req):
        """Triton's signature, constexprs and attributes for fn from the request.

        Specialisation policy: pointers are declared 16-byte aligned (kevo allocates every
        buffer itself, aligned to 256 bytes, and passes only base pointers); integers get no
        divisibility or equal-to-1 specialisation, so one cubin serves every shape."""
        given = req.get("signature") or {}
        constexprs = dict(req.get("constexprs") or {})
        runtime_params = [p for p in fn.params if not p.is_constexpr]
        names = [p.name for p in runtime_params]
        if isinstance(given, list):
            if len(given) != len(names):
                raise Rejected(0, 0, f"signature has {len(given)} types but '{fn.__name__}' "
                               f"takes {len(names)} non-constexpr parameters ({', '.join(names)})")
            given = dict(zip(names, given))
        for k in given:
            if k not in names:
                raise Rejected(0, 0, f"signature names '{k}', which is not a non-constexpr "
                               f"parameter of '{fn.__name__}' ({', '.join(names)})")
        sig, attrs, cx, params = {}, {}, {}, []
        for i, p in enumerate(fn.params):
            if p.is_constexpr:
                if p.name in constexprs:
                    cx[p.name] = constexprs.pop(p.name)
                elif p.has_default:
                    cx[p.name] = p.default
                else:
                    raise Rejected(0, 0, f"constexpr '{p.name}' of '{fn.__name__}' has no value: "
                                   f"give it a default ({p.name}: tl.constexpr = ...) or a knob; "
                                   "the kernel is compiled once for every shape, so a value a "
                                   "launcher would compute from the shape is not there")
                sig[p.name] = "constexpr"
                continue
            if p.name not in given:
                raise Rejected(0, 0, f"signature lacks a type for parameter '{p.name}'")
            ty = str(given[p.name])
            sig[p.name] = ty
            params.append({"name": p.name, "type": ty})
            if ty.startswith("*"):
                attrs[(i, )] = [["tt.divisibility", 16]]
        if constexprs:
            k = next(iter(constexprs))
            raise Rejected(0, 0, f"constexpr '{k}' is not a tl.constexpr parameter of "
                           f"'{fn.__name__}'")
        return {"signature": sig, "constexprs": cx, "attrs": attrs, "params": params}

    def diagnose(self, e, ns, def_lines):
        """A Rejected for an exception raised while compiling. What reaches the model is
        Triton's own diagnostic: a CompilationError's message and the kernel's line; for any
        other exception its type, and its first line only when Triton's code raised it (not
        the candidate's: text a candidate computes is not sent back). Clipped; never a
        traceback."""
        node = getattr(e, "node", None)
        if isinstance(e, self.CompilationError):
            msg = getattr(e, "error_message", None) or ""
            cause = e.__cause__ or e.__context__
            if not msg and cause is not None:
                msg = type(cause).__name__
            msg = msg or "compilation error"
        else:
            tb, last = e.__traceback__, ""
            while tb is not None:
                last, tb = tb.tb_frame.f_code.co_filename, tb.tb_next
            first = (str(e).strip().splitlines() or [""])[0]
            msg = f"{type(e).__name__}: {first}" if first and last.startswith(
                self.triton_dir) else f"compile failed: {type(e).__name__}"
        line, col = 0, 0
        if node is not None and hasattr(node, "lineno"):
            src = getattr(e, "src", None)
            for name, obj in ns.items():
                if getattr(obj, "src", None) == src and name in def_lines:
                    line = def_lines[name] + node.lineno - 1
                    col = node.col_offset + 1
                    break
        elif isinstance(e, SyntaxError):
            line, col = e.lineno or 0, e.offset or 0
        return Rejected(line, col, clip(msg))

    # --- in the zygote: PTX -> cubin --------------------------------------------------------

    def to_cubin(self, req, ptx, md, extra, deadline=None, while_ptxas=None):
        """Checks a child's result against the request and runs ptxas, killed at the deadline
        (time.monotonic(); PtxasTimeout); while_ptxas() is called once ptxas has started.
        Returns (info, cubin)."""
        cc, target, backend, options = self.target(req)
        name = md.get("name")
        if name != req["kernel"] or not isinstance(name, str) or \
                not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,254}", name) or \
                not re.search(r"^\s*\.visible\s+\.entry\s+" + re.escape(name) + r"\s*\(", ptx,
                              re.MULTILINE):
            raise ValueError("the compile's result does not name the requested kernel")
        ints = {}
        for k, lo, hi in (("shared", 0, 1 << 24), ("num_warps", 1, 64), ("tmem_size", 0, 1 << 24),
                          ("global_scratch_size", 0, 1 << 30), ("global_scratch_align", 1, 4096),
                          ("profile_scratch_size", 0, 1 << 30),
                          ("profile_scratch_align", 1, 4096)):
            v = md.get(k)
            v = lo if v is None else v
            if type(v) is not int or not lo <= v <= hi:
                raise ValueError(f"the compile's result has a bad '{k}'")
            ints[k] = v
        if ints["num_warps"] != options.num_warps:
            raise ValueError("the compile's result has other num_warps than asked for")
        cubin = self.run_ptxas(backend, ptx, options, cc, deadline, while_ptxas)
        info = {"name": name, "num_warps": ints["num_warps"], "num_stages": options.num_stages,
                "threads": ints["num_warps"] * 32, "shared": ints["shared"],
                "num_ctas": int(options.num_ctas), "launch_pdl": bool(options.launch_pdl),
                "launch_cooperative_grid": bool(options.launch_cooperative_grid),
                "tmem_size": ints["tmem_size"], "arch": f"sm_{cc}",
                "params": extra["params"], "constexprs": extra["constexprs"],
                "extra_args": [{"name": "global_scratch", "type": "*i8",
                                "bytes_per_program": ints["global_scratch_size"],
                                "align": ints["global_scratch_align"]},
                               {"name": "profile_scratch", "type": "*i8",
                                "bytes_per_program": ints["profile_scratch_size"],
                                "align": ints["profile_scratch_align"]}],
                "triton_version": self.triton.__version__}
        return info, cubin

    def run_ptxas(self, backend, ptx, options, cc, deadline, while_ptxas=None):
        """Triton's own make_cubin (its ptxas, its flags), with ptxas killed at the deadline: PTX
        a candidate shaped can keep ptxas busy for minutes (a long inline asm), and the server
        must answer by the compile's deadline and stay warm. What ptxas leaves in the server's
        temporary directory on a failure is removed. while_ptxas() runs once ptxas is started
        (the server's own work, overlapping ptxas)."""
        import tempfile
        nvidia = sys.modules[type(backend).__module__]
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise PtxasTimeout()

        def run(cmd, check=False, **kw):  # subprocess.run's contract, as make_cubin uses it
            with subprocess.Popen(cmd, **kw) as proc:
                try:
                    if while_ptxas is not None:
                        while_ptxas()
                    rc = wait_exit(proc, deadline)
                except BaseException:
                    proc.kill()
                    proc.wait()
                    raise
            if check and rc:
                raise subprocess.CalledProcessError(rc, cmd)
            return subprocess.CompletedProcess(cmd, rc)

        shim = type("subprocess", (), {k: getattr(subprocess, k) for k in dir(subprocess)
                                       if not k.startswith("__")})
        shim.run = staticmethod(run)
        saved, nvidia.subprocess = nvidia.subprocess, shim
        saved_out, sys.stdout = sys.stdout, Discard()  # Triton prints the whole PTX on a failure
        try:
            return backend.make_cubin(ptx, {}, options, cc)
        except subprocess.TimeoutExpired:
            raise PtxasTimeout() from None
        finally:
            nvidia.subprocess, sys.stdout = saved, saved_out
            tmp = tempfile.gettempdir()
            for name in os.listdir(tmp):
                if name.startswith("tmp") and name.endswith((".ptx", ".log", ".ptx.o")):
                    try:
                        os.unlink(os.path.join(tmp, name))
                    except OSError:
                        pass


class PtxasTimeout(Exception):
    pass


def wait_exit(proc, deadline):
    """proc's exit status, waiting until deadline (time.monotonic(); None: no limit), else
    subprocess.TimeoutExpired. Popen.wait(timeout) polls with sleeps that double from 0.5 ms
    to 50 ms, so a ptxas that took 17 ms was seen to end at 31.5 ms, one of 33 ms at 63.5 ms
    (ptxas's phase on the H200 came in steps of 15.5, 31.5, 63.5, 113.5 ms): a pidfd says at
    once (Linux 5.3; else Popen's own wait)."""
    if deadline is None:
        return proc.wait()
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        return proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    try:
        while proc.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(proc.args, 0)
            select.select([fd], [], [], left)
    finally:
        os.close(fd)
    return proc.returncode


class Discard:
    """A stdout that keeps nothing."""

    def write(self, text):
        return len(text)

    def flush(self):
        pass


# --- frames -----------------------------------------------------------------------------------


def read_exact(fd, n, deadline=None):
    chunks = []
    while n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
        b = os.read(fd, min(n, 1 << 20))
        if not b:
            return None
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def read_frame(fd, max_header=MAX_HEADER, max_blob=MAX_PTX, deadline=None, max_blobs=4):
    head = read_exact(fd, 4, deadline)
    if head is None:
        return None, []
    (n, ) = struct.unpack("<I", head)
    if n > max_header:
        raise ValueError("frame header too large")
    raw = read_exact(fd, n, deadline)
    header = json.loads(raw) if raw is not None else None
    if not isinstance(header, dict):
        raise ValueError("bad frame header")
    sizes = header.get("blobs", [])
    if not isinstance(sizes, list) or len(sizes) > max_blobs or \
            any(type(s) is not int or not 0 <= s <= max_blob for s in sizes):
        raise ValueError("bad frame blobs")
    blobs = [read_exact(fd, s, deadline) for s in sizes]
    if any(b is None for b in blobs):
        raise ValueError("short frame")
    return header, blobs


def write_frame(fd, header, blobs=(), deadline=None):
    """Writes one frame; with a deadline, fd is made non-blocking and TimeoutError is raised
    when the reader has not taken it all by then."""
    header["blobs"] = [len(b) for b in blobs]
    data = json.dumps(header).encode()
    out = struct.pack("<I", len(data)) + data + b"".join(blobs)
    view = memoryview(out)
    if deadline is not None:
        os.set_blocking(fd, False)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                raise TimeoutError from None


def kill_and_reap(pid):
    """SIGKILLs a compile process (gone already is fine) and waits for it; its wait status."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue


# --- the zygote -------------------------------------------------------------------------------


class Zygote:

    def __init__(self, limits):
        self.compiler = Compiler()
        self.compiler.unchecked = bool(limits.get("unchecked"))
        self.limits = limits  # as_bytes, fsize_bytes, nofile for each child
        self.abi = triton_sandbox.landlock_abi()
        self.paths = triton_sandbox.read_paths()
        self.pid = os.getpid()
        # The next compile processes, oldest first: (pid, request fd, result fd). Two when they
        # warm up before their request (a warm-up takes about as long as a small compile, so
        # the one forked with a request has the whole of the next compile to finish in too).
        self.spares = []
        self.nspares = 2 if limits.get("prefault") else 1
        self.arch = "sm_90"  # the server's own (warm_up)

    def warm_up(self, arch):
        """Everything Triton loads or runs lazily (LLVM, dialects, ptxas --version), once, here:
        a child may not exec and need not read anything new."""
        from triton.backends.nvidia.compiler import get_ptxas
        for cc in (90, 100):
            try:
                get_ptxas(cc).version
            except Exception:
                pass
        self.arch = arch
        req = dict(WARMUP_REQ, arch=arch)
        ptx, md, extra = self.compiler.to_ptx(req)
        self.compiler.to_cubin(req, ptx, md, extra)
        linecache.clearcache()

    def drop_root(self):
        """Started as root, the zygote becomes the unprivileged user kevo named once Triton is
        imported (Python itself may live where only root can look), before any request: a
        candidate that escapes every other wall still cannot read root's files (/etc/shadow,
        /proc/<kevo>/environ) or act as root."""
        uid, gid = self.limits.get("drop_uid", -1), self.limits.get("drop_gid", -1)
        if os.geteuid() != 0 or uid is None or uid < 0:
            return
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        try:
            os.setresuid(0, 0, 0)
        except PermissionError:
            return
        raise OSError("root could be regained after dropping it")

    # --- compile processes ----------------------------------------------------------------

    def spawn(self):
        """Forks the next compile process before its request comes (the spare), so that the
        fork and the walls are off a compile's critical path. The spare walls itself in at once
        and then waits for one request on a pipe of its own; until it reads one it has run
        nothing of anyone's. Called at start, as soon as a compile's request is handed over (so
        the next one walls itself in and warms up while that compile runs), and after each
        reply (if that failed)."""
        while len(self.spares) < self.nspares:
            self.spares.append(self.fork_one())

    def fork_one(self):
        q_r, q_w = os.pipe()
        r_r, r_w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            for fd in (q_r, q_w, r_r, r_w):
                os.close(fd)
            raise
        if pid == 0:
            os.close(q_w)
            os.close(r_r)
            self.child(q_r, r_w)
        os.close(q_r)
        os.close(r_w)
        return pid, q_w, r_r

    def spawn_quietly(self):
        """spawn(), where a failure (no fork, no pipe) is tried again later rather than failing
        the compile under way."""
        try:
            self.spawn()
        except Exception:
            pass

    def drop_spares(self):
        while self.spares:
            pid, q_w, r_r = self.spares.pop()
            os.close(q_w)
            os.close(r_r)
            kill_and_reap(pid)

    def child(self, q_r, r_w):
        """In the fork: confine (the result pipe becomes fd 3, the request pipe fd 4), read one
        request and close fd 4, compile it to PTX, send the result, exit. Never returns."""
        code = 0
        try:  # the CPU limit is the server's until the request names its deadline
            out, req_fd = triton_sandbox.confine([r_w, q_r], self.pid, self.limits, self.paths,
                                                 self.abi)
            self.compiler.prepare(self.arch)
            write_frame(out, {"ready": True})  # what comes after the request is not trusted
        except BaseException as e:
            try:
                write_frame(r_w, {"ok": False, "sandbox": True,
                                  "error": clip(f"the compile sandbox could not be set up: {e}")})
            finally:
                os._exit(3)
        warm_ms, cut = 0.0, False
        try:  # walled in, and still nobody's code but the server's: its own warm-up
            if self.limits.get("prefault"):
                warm_ms, cut = self.compiler.prefault(req_fd)
        except BaseException:
            os._exit(4)
        try:
            req, _ = read_frame(req_fd, MAX_HEADER, 0)
            os.close(req_fd)
            if req is None:  # no compile for this one (the server is stopping)
                os._exit(0)
            self.compiler.phases.start(req.pop("t0", None))
            self.compiler.phases.mark("handoff")
            self.compiler.phases.ms.update(warm=round(warm_ms, 2), warm_cut=int(cut))
            used = sum(os.times()[:2])
            cpu = int(used + float(req.get("timeout") or 120)) + 2
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))  # lowering it: always allowed
        except BaseException:
            os._exit(4)
        try:
            ptx, md, extra = self.compiler.to_ptx(req)
            write_frame(out, {"ok": True, "md": md, "extra": extra,
                              "phases": self.compiler.phases.ms}, [ptx.encode()])
        except Rejected as r:
            write_frame(out, {"ok": False, "error": clip(r.message), "line": r.line, "col": r.col})
        except BaseException as e:  # MemoryError, RecursionError, ...: its type only
            code = 1
            try:
                write_frame(out, {"ok": False, "error": f"compile failed: {type(e).__name__}"})
            except BaseException:
                pass
        os._exit(code)

    def compile(self, req):
        """One request: hand it to the spare compile process (forking one if there is none),
        wait for its result (or its deadline), make the cubin with ptxas, and reap the process
        before replying. Returns the reply header fields and the blobs."""
        if not isinstance(req.get("src"), str) or not isinstance(req.get("kernel"), str):
            return {"ok": False, "error": "a compile request needs src and kernel"}, []
        t0 = time.monotonic()
        phases = Phases()
        phases.start(t0)
        timeout = float(req.get("timeout") or 120)
        if not self.spares:
            self.spawn()
        pid, q_w, r = self.spares.pop(0)
        phases.mark("fork")
        result, blobs, why, status = None, [], None, 0
        try:
            try:
                # Its word that it is walled in comes before it has seen any request, so only
                # the server's own code can have written it (or the reason it could not).
                ready, _ = read_frame(r, 1 << 12, 0, t0 + timeout, max_blobs=0)
                if not isinstance(ready, dict) or not ready.get("ready"):
                    return {"ok": False, "internal": True, "error": clip(
                        (ready or {}).get("error") or "the compile process could not start")}, []
                phases.mark("ready")
                write_frame(q_w, dict(req, t0=time.monotonic()), deadline=t0 + timeout)
                os.close(q_w)
                q_w = -1
                self.spawn_quietly()  # the next one: its walls and warm-up overlap this compile
                result, blobs = read_frame(r, 1 << 20, MAX_PTX, t0 + timeout, max_blobs=1)
            except TimeoutError:
                why = "timeout"
            except Exception:  # ValueError, OSError, and what a parser meets (RecursionError)
                why = "bad result"
            finally:
                if q_w >= 0:
                    os.close(q_w)
                os.close(r)
                try:  # it has sent its result (or failed): it dies while ptxas runs
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            phases.mark("child")
            fields, blobs = self.finish(req, result, blobs, why, timeout, phases)
        finally:
            status = kill_and_reap(pid)
        if result is None and why is None:
            sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
            how = f"killed by signal {sig} ({signal.Signals(sig).name})" if sig else \
                f"exited with status {os.waitstatus_to_exitcode(status)}"
            hint = " (over its memory or CPU limit?)" if sig in (signal.SIGKILL, signal.SIGXCPU,
                                                                 signal.SIGSEGV) else ""
            return {"ok": False, "error": f"the compile process {how}{hint} and sent no "
                    "result"}, []
        if fields.get("ok"):
            phases.mark("reap")
            child = result.get("phases")
            if isinstance(child, dict):  # the child's own marks: informative only, bounded
                fields["info"]["phases"] = {
                    k: float(v) for k, v in list(child.items())[:16]
                    if k in PHASE_NAMES and type(v) in (int, float) and 0 <= v < 1e7}
                fields["info"]["phases"].update(phases.ms)
            fields["info"]["server_ms"] = (time.monotonic() - t0) * 1000.0
        return fields, blobs

    def finish(self, req, result, blobs, why, timeout, phases):
        """The reply for a compile process's result (None: it sent none; why: timeout or a bad
        frame): its error, or the cubin ptxas makes of its PTX."""
        if why == "timeout":
            return {"ok": False, "timeout": True,
                    "error": f"compiling took longer than {timeout:g} s"}, []
        if why == "bad result":
            return {"ok": False, "error": "the compile process sent a malformed result"}, []
        if result is None:
            return {"ok": False}, []
        if not result.get("ok"):
            line, col = result.get("line", 0), result.get("col", 0)
            line = line if type(line) is int and 0 <= line < 1 << 24 else 0
            col = col if type(col) is int and 0 <= col < 1 << 24 else 0
            msg = clip(result.get("error") or "compile failed")
            return {"ok": False, "error": msg,
                    "diagnostics": [{"line": line, "col": col, "severity": "error",
                                     "message": msg}]}, []
        try:
            if len(blobs) != 1:
                raise ValueError("the compile's result is not one PTX text")
            ptx = blobs[0].decode("ascii")
            md, extra = result.get("md"), result.get("extra")
            if not isinstance(md, dict) or not isinstance(extra, dict):
                raise ValueError("the compile's result lacks its metadata")
            # (Where the next compile process could not be forked with the request, it is
            # forked once ptxas has started, so that it is ready by the next request.)
            info, cubin = self.compiler.to_cubin(req, ptx, md, extra, phases.t0 + timeout,
                                                 self.spawn_quietly)
            phases.mark("ptxas")
        except PtxasTimeout:
            return {"ok": False, "timeout": True,
                    "error": f"compiling took longer than {timeout:g} s (in ptxas)"}, []
        except Exception as e:
            first = (str(e).strip().splitlines() or [""])[0]
            msg = clip(f"{type(e).__name__}: {first}", 500)
            return {"ok": False, "error": msg,
                    "diagnostics": [{"line": 0, "col": 0, "severity": "error",
                                     "message": msg}]}, []
        return {"ok": True, "info": info}, [cubin]

    def selftest(self, req):
        """The child's wall seen from inside, for kevo's tests: runs in a confined fork."""
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                (out, ) = triton_sandbox.confine([w], self.pid, dict(self.limits, cpu_s=10),
                                                 self.paths, self.abi)
                rep = {"ok": True, "pid": os.getpid(), "zygote": self.pid,
                       "cwd": os.getcwd(), "env": sorted(os.environ), "uid": os.getuid(),
                       "sid": os.getsid(0), "landlock": self.abi}
                path = req.get("write")
                if path:
                    try:
                        with open(path, "w") as f:
                            f.write("kevo sandbox self-test\n")
                        rep["write"] = "allowed"
                    except OSError as e:
                        rep["write"] = f"denied: {e.strerror}"
                write_frame(out, rep)
            except BaseException as e:
                write_frame(w, {"ok": False, "error": clip(str(e))})
            os._exit(0)
        os.close(w)
        try:
            rep, _ = read_frame(r, 1 << 20, 0, time.monotonic() + 30)
        finally:
            os.close(r)
            os.waitpid(pid, 0)
        return rep or {"ok": False, "error": "no reply"}


def main():
    arch = sys.argv[1] if len(sys.argv) > 1 else "sm_90"
    limits = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    t0 = time.monotonic()
    try:
        zygote = Zygote(limits)
        import_ms = (time.monotonic() - t0) * 1000.0
        zygote.warm_up(arch)
        zygote.drop_root()
        # The same kernel again, through the whole wall: a sandbox that cannot compile it (a
        # path Landlock does not grant, a file the unprivileged user cannot read) says so now,
        # once, rather than in every candidate's verdict.
        gc.freeze()  # (the first compile process is forked during this compile)
        fields, _ = zygote.compile(dict(WARMUP_REQ, arch=arch))
        if not fields.get("ok"):
            raise RuntimeError("the compile sandbox cannot compile kevo's own test kernel: " +
                               str(fields.get("error")))
        # Everything imported so far is the zygote's for good: the collector of a compile
        # process need not walk (and so copy) those pages.
        gc.freeze()
        zygote.spawn()
    except Exception as e:
        write_frame(PROTO_OUT, {"op": "hello", "ok": False,
                                "error": f"{type(e).__name__}: {e}"})
        return 1
    write_frame(PROTO_OUT, {"op": "hello", "ok": True, "triton": zygote.compiler.triton.__version__,
                            "python": sys.version.split()[0], "pid": os.getpid(),
                            "landlock": zygote.abi, "import_ms": import_ms,
                            "warmup_ms": (time.monotonic() - t0) * 1000.0 - import_ms})
    while True:
        req, _ = read_frame(PROTO_IN)
        if req is None or req.get("op") == "bye":
            zygote.drop_spares()
            return 0
        reply = {"id": req.get("id"), "op": req.get("op")}
        blobs = []
        if req.get("op") == "selftest":
            reply.update(zygote.selftest(req))
        elif req.get("op") == "compile":
            fields, blobs = zygote.compile(req)
            reply.update(fields)
        else:
            reply.update(ok=False, error=f"unknown op '{clip(req.get('op'), 32)}'")
        write_frame(PROTO_OUT, reply, blobs)
        zygote.spawn()  # the next compile's process, while kevo reads this reply


if __name__ == "__main__":
    sys.exit(main())
