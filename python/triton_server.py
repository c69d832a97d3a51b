"""kevo's Triton compile server.

kevo starts this file (written out of the kevo binary into a private temporary directory)
with a scrubbed environment, resource limits and, where the kernel has Landlock, no write
access outside that directory. It imports Triton once, compiles a small kernel to warm up,
says hello, and then answers compile requests until its input closes.

Wire format (the same frames as kevo's evaluator worker, runtime/proto.h): a u32
little-endian length, a JSON header, then the blobs the header announces in "blobs". Requests
arrive on fd 3, replies leave on fd 4; fds 0-2 are not the protocol, so a stray print or a
child process (ptxas) writing to stdout cannot corrupt a frame.

Candidate sources are untrusted. Before anything of a source runs, its syntax tree is checked
against an allow-list (check_source): imports of triton, triton.language and math only; at top
level only @triton.jit functions, constants and string literals (the kevo:launch block); no
names or attributes that reach Python's escape hatches. Triton's code generator calls plain
Python functions it meets in a kernel body at compile time, so the bodies are checked too: an
attribute chain rooted at a module may only pass through the modules in ALLOWED_MODULES.
"""

import ast
import json
import linecache
import os
import struct
import sys
import time
import traceback

PROTO_IN, PROTO_OUT = 3, 4
MAX_HEADER = 16 << 20

ALLOWED_IMPORTS = ("triton", "triton.language", "math")
# Modules an attribute chain may pass through (checked against the real modules).
ALLOWED_MODULES = ("triton", "triton.language", "triton.language.math", "triton.language.extra",
                   "triton.language.extra.cuda", "triton.language.extra.libdevice",
                   "triton.language.extra.cuda.libdevice", "math")
# What a candidate may take from the triton package itself (its other functions, such as
# triton.compile, would read files or change the server's state at compile time).
TRITON_ROOT_ATTRS = frozenset(("jit", "language", "cdiv", "next_power_of_2"))
# Names no candidate may mention, anywhere: Python's ways out of the allow-list.
FORBIDDEN_NAMES = frozenset((
    "exec", "eval", "open", "compile", "__import__", "getattr", "setattr", "delattr", "hasattr",
    "globals", "locals", "vars", "dir", "breakpoint", "input", "help", "exit", "quit", "type",
    "object", "super", "memoryview", "classmethod", "staticmethod", "property", "__builtins__",
    "__loader__", "__spec__", "__file__", "__name__", "__dict__", "id", "print"))
# Nodes a kernel body may not contain (Triton does not compile them anyway).
FORBIDDEN_BODY_NODES = (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.ClassDef,
                        ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Await, ast.Yield,
                        ast.YieldFrom, ast.Try, ast.Delete, ast.AsyncFor, ast.AsyncWith)
SAFE_BUILTINS = ("range", "min", "max", "len", "int", "float", "bool", "tuple", "list", "dict",
                 "abs", "isinstance", "enumerate", "zip", "True", "False", "None")

WARMUP_SRC = '''import triton
import triton.language as tl


@triton.jit
def kevo_warmup(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
'''


class Rejected(Exception):
    """A source broke a rule, or failed to compile: carries line, column and a message."""

    def __init__(self, line, col, message, kind="error"):
        super().__init__(message)
        self.line, self.col, self.message, self.kind = line, col, message, kind


def reject(node, message):
    raise Rejected(getattr(node, "lineno", 0), getattr(node, "col_offset", -1) + 1, message)


# --- the allow-list ---------------------------------------------------------------------------


def is_constant_expr(node, depth=0):
    """A literal: numbers, strings, booleans, None, +/- of them, tuples/lists of them."""
    if depth > 8:
        return False
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        return is_constant_expr(node.operand, depth + 1)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(is_constant_expr(e, depth + 1) for e in node.elts)
    return False


class Checker:

    def __init__(self, modules):
        self.modules = modules  # the importable modules, by dotted name
        self.aliases = {}  # local name -> the object it was imported as

    def check(self, tree):
        for stmt in tree.body:
            self.check_top(stmt)

    def check_top(self, stmt):
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and \
                isinstance(stmt.value.value, str):
            return  # a docstring or the kevo:launch block
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                if a.name not in ALLOWED_IMPORTS:
                    reject(stmt, f"import of '{a.name}' is not allowed (only triton, "
                           "triton.language and math)")
                if a.asname:
                    self.aliases[a.asname] = self.modules[a.name]
                else:
                    self.aliases[a.name.split(".")[0]] = self.modules[a.name.split(".")[0]]
            return
        if isinstance(stmt, ast.ImportFrom):
            if stmt.level or stmt.module not in ALLOWED_IMPORTS:
                reject(stmt, f"import from '{stmt.module or '.'}' is not allowed (only triton, "
                       "triton.language and math)")
            for a in stmt.names:
                if a.name == "*" or a.name.startswith("_"):
                    reject(stmt, f"'from {stmt.module} import {a.name}' is not allowed")
                value = getattr(self.modules[stmt.module], a.name, None)
                if stmt.module == "triton" and a.name not in TRITON_ROOT_ATTRS:
                    reject(stmt, f"'from triton import {a.name}' is not allowed (only "
                           f"{', '.join(sorted(TRITON_ROOT_ATTRS))})")
                self.check_reached(stmt, value, f"{stmt.module}.{a.name}")
                self.aliases[a.asname or a.name] = value
            return
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if not isinstance(t, ast.Name) or t.id.startswith("__") or \
                        t.id in FORBIDDEN_NAMES or t.id in self.aliases:
                    reject(t, "a top-level assignment must bind a plain new name")
            if isinstance(stmt, ast.AnnAssign):
                self.check_annotation(stmt.annotation)
            if stmt.value is not None and not self.is_constant_value(stmt.value):
                reject(stmt.value, "a top-level constant must be a literal or "
                       "tl.constexpr(literal)")
            return
        if isinstance(stmt, ast.FunctionDef):
            self.check_function(stmt)
            return
        reject(stmt, f"'{type(stmt).__name__}' is not allowed at top level (only @triton.jit "
               "functions, imports of triton, triton.language and math, constants and strings)")

    def is_constant_value(self, node):
        if is_constant_expr(node):
            return True
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and \
                is_constant_expr(node.args[0]):
            return self.resolve(node.func) is self.modules["triton.language"].constexpr
        return False

    def resolve(self, node):
        """The object an attribute chain rooted at an imported name means, or None."""
        parts = []
        while isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                return None
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        obj = self.aliases[node.id]
        for part in reversed(parts):
            obj = getattr(obj, part, None)
        return obj

    def check_reached(self, node, value, what):
        if isinstance(value, type(sys)) and value.__name__ not in ALLOWED_MODULES:
            reject(node, f"'{what}' reaches module '{value.__name__}', which is not allowed")

    def check_decorator(self, dec):
        target = dec.func if isinstance(dec, ast.Call) else dec
        if self.resolve(target) is not self.modules["triton"].jit:
            reject(dec, "the only decorator allowed is @triton.jit")
        if isinstance(dec, ast.Call):
            if dec.args or not all(is_constant_expr(k.value) for k in dec.keywords):
                reject(dec, "@triton.jit(...) takes only literal keyword arguments")

    def check_annotation(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return
        if not isinstance(node, (ast.Name, ast.Attribute)):
            reject(node, "an annotation must be a name such as tl.constexpr")
        self.check_expr(node)

    def check_function(self, fn):
        if len(fn.decorator_list) != 1:
            where = fn.decorator_list[1] if fn.decorator_list else fn
            reject(where, f"function '{fn.name}' must have exactly one decorator, @triton.jit")
        self.check_decorator(fn.decorator_list[0])
        if fn.name.startswith("__") or fn.name in FORBIDDEN_NAMES or fn.name in self.aliases:
            reject(fn, f"function name '{fn.name}' is not allowed")
        args = fn.args
        if args.vararg or args.kwarg:
            reject(fn, "a kernel takes no *args or **kwargs")
        for a in args.posonlyargs + args.args + args.kwonlyargs:
            if a.annotation is not None:
                self.check_annotation(a.annotation)
        for d in args.defaults + [d for d in args.kw_defaults if d is not None]:
            if not is_constant_expr(d):
                reject(d, "a parameter default must be a literal")
        if fn.returns is not None:
            self.check_annotation(fn.returns)
        for stmt in fn.body:
            self.check_expr(stmt)

    def check_expr(self, root):
        """Walks a kernel body (or an annotation) for forbidden nodes, names and attributes."""
        nodes = list(ast.walk(root))
        attr_bases = {id(n.value) for n in nodes if isinstance(n, ast.Attribute)}
        for node in nodes:
            if isinstance(node, FORBIDDEN_BODY_NODES):
                reject(node, f"'{type(node).__name__}' is not allowed in a kernel")
            if isinstance(node, ast.Attribute):
                if node.attr.startswith("_"):
                    reject(node, f"attribute '{node.attr}' is not allowed (no attributes "
                           "starting with '_')")
                self.check_chain(node)
            elif isinstance(node, ast.Name):
                if node.id in FORBIDDEN_NAMES or node.id.startswith("__"):
                    reject(node, f"name '{node.id}' is not allowed")
                if isinstance(self.aliases.get(node.id), type(sys)) and id(node) not in attr_bases:
                    # A module may only be used through an attribute chain, never as a value
                    # (x = tl) whose attributes would escape check_chain.
                    reject(node, f"module '{node.id}' may only be used as in {node.id}.name")
            elif isinstance(node, ast.Constant) and isinstance(node.value, bytes):
                reject(node, "bytes literals are not allowed")

    def check_chain(self, node):
        """An attribute chain rooted at an import may pass only through allowed modules."""
        parts = []
        base = node
        while isinstance(base, ast.Attribute):
            parts.append(base.attr)
            base = base.value
        if not isinstance(base, ast.Name) or base.id not in self.aliases:
            return  # an attribute of a value (x.dtype): no module is reached this way
        obj, what = self.aliases[base.id], base.id
        self.check_reached(node, obj, what)
        for part in reversed(parts):
            if obj is self.modules["triton"] and part not in TRITON_ROOT_ATTRS:
                reject(node, f"'{what}.{part}' is not allowed (from triton itself only "
                       f"{', '.join(sorted(TRITON_ROOT_ATTRS))})")
            obj = getattr(obj, part, None)
            what += "." + part
            self.check_reached(node, obj, what)


def check_source(src, filename, modules):
    """Parses and checks a source; raises Rejected with the line of the first problem."""
    try:
        tree = ast.parse(src, filename=filename)
    except SyntaxError as e:
        raise Rejected(e.lineno or 0, e.offset or 0, f"syntax error: {e.msg}")
    checker = Checker(modules)
    checker.check(tree)
    return tree, checker


# --- compiling --------------------------------------------------------------------------------


class Server:

    def __init__(self, workdir):
        import math
        import triton
        import triton.language as tl
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        import triton.language.extra.cuda.libdevice  # noqa: F401 (reachable from kernels)
        self.triton, self.tl, self.GPUTarget, self.ASTSource = triton, tl, GPUTarget, ASTSource
        self.modules = {"triton": triton, "triton.language": tl, "math": math}
        self.workdir = workdir
        self.srcdir = os.path.join(workdir, "src")
        os.makedirs(self.srcdir, exist_ok=True)
        self.count = 0

    def restricted_import(self, name, globals=None, locals=None, fromlist=(), level=0):
        if level or name not in ALLOWED_IMPORTS:
            raise ImportError(f"import of '{name}' is not allowed")
        mod = sys.modules[name]
        return mod if fromlist else sys.modules[name.split(".")[0]]

    def load(self, src, filename):
        """Checks, then runs a source's top level; returns its namespace and def lines."""
        tree, checker = check_source(src, filename, self.modules)
        self.count += 1
        path = os.path.join(self.srcdir, f"candidate_{os.getpid()}_{self.count}.py")
        with open(path, "w") as f:
            f.write(src)
        builtins = {k: __builtins__[k] if isinstance(__builtins__, dict) else getattr(
            __builtins__, k) for k in SAFE_BUILTINS}
        builtins["__import__"] = self.restricted_import
        ns = {"__builtins__": builtins, "__name__": f"kevo_candidate_{self.count}"}
        code = compile(tree, path, "exec")
        try:
            exec(code, ns)
        finally:
            os.unlink(path)
        lines = {n.name: n.lineno for n in tree.body if isinstance(n, ast.FunctionDef)}
        return ns, lines

    def compile(self, req):
        filename = req.get("filename") or "candidate.py"
        kernel_name = req["kernel"]
        src = req["src"]
        t0 = time.monotonic()
        ns, def_lines = {}, {}
        try:
            ns, def_lines = self.load(src, filename)
            fn = ns.get(kernel_name)
            if not isinstance(fn, self.triton.runtime.jit.JITFunction):
                raise Rejected(0, 0, f"no @triton.jit function named '{kernel_name}'")
            srcinfo = self.signature(fn, req)
            asts = self.ASTSource(fn, srcinfo["signature"], srcinfo["constexprs"],
                                  srcinfo["attrs"])
            arch = str(req.get("arch") or "sm_90")
            cc = int(arch[3:].rstrip("a")) if arch.startswith("sm_") else int(arch)
            target = self.GPUTarget("cuda", cc, 32)
            opts = {"num_warps": int(req.get("num_warps", 4)),
                    "num_stages": int(req.get("num_stages", 3))}
            ck = self.triton.compile(asts, target=target, options=opts)
        except Rejected:
            raise
        except Exception as e:
            raise self.diagnose(e, ns, def_lines, filename)
        finally:
            linecache.clearcache()
        md = ck.metadata
        extra = [{"name": "global_scratch", "type": "*i8",
                  "bytes_per_program": int(md.global_scratch_size or 0),
                  "align": int(md.global_scratch_align or 1)},
                 {"name": "profile_scratch", "type": "*i8",
                  "bytes_per_program": int(md.profile_scratch_size or 0),
                  "align": int(md.profile_scratch_align or 1)}]
        info = {"name": md.name, "num_warps": int(md.num_warps), "num_stages": opts["num_stages"],
                "threads": int(md.num_warps) * int(md.warp_size), "shared": int(md.shared),
                "num_ctas": int(md.num_ctas), "launch_pdl": bool(md.launch_pdl),
                "launch_cooperative_grid": bool(md.launch_cooperative_grid),
                "tmem_size": int(md.tmem_size or 0), "arch": f"sm_{cc}",
                "params": srcinfo["params"], "extra_args": extra,
                "constexprs": {k: v for k, v in srcinfo["constexprs"].items()},
                "triton_version": self.triton.__version__,
                "server_ms": (time.monotonic() - t0) * 1000.0}
        return info, ck.asm["cubin"]

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
                    raise Rejected(0, 0, f"constexpr '{p.name}' of '{fn.__name__}' has no value "
                                   "(give it in constexprs)")
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

    def diagnose(self, e, ns, def_lines, filename):
        """A Rejected with the candidate's own line for an exception from Triton."""
        node = getattr(e, "node", None)
        msg = getattr(e, "error_message", None) or str(e).strip() or type(e).__name__
        cause = e.__cause__ or e.__context__
        if not getattr(e, "error_message", None) and cause is not None and \
                str(cause).strip() and str(cause).strip() not in msg:
            msg = f"{msg}: {str(cause).strip()}"
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
        else:
            tb = traceback.extract_tb(e.__traceback__)
            for fr in reversed(tb):
                if os.path.basename(fr.filename).startswith("candidate_"):
                    line = fr.lineno
                    break
        return Rejected(line, col, msg.splitlines()[-1] if len(msg) > 2000 else msg)


# --- frames -----------------------------------------------------------------------------------


def read_exact(fd, n):
    chunks = []
    while n:
        b = os.read(fd, min(n, 1 << 20))
        if not b:
            return None
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def read_frame(fd):
    head = read_exact(fd, 4)
    if head is None:
        return None, []
    (n, ) = struct.unpack("<I", head)
    if n > MAX_HEADER:
        raise ValueError("frame header too large")
    header = json.loads(read_exact(fd, n))
    blobs = [read_exact(fd, int(s)) for s in header.get("blobs", [])]
    return header, blobs


def write_frame(fd, header, blobs=()):
    header["blobs"] = [len(b) for b in blobs]
    data = json.dumps(header).encode()
    out = struct.pack("<I", len(data)) + data + b"".join(blobs)
    view = memoryview(out)
    while view:
        view = view[os.write(fd, view):]


def selftest(req):
    """What the sandbox looks like from inside: for kevo's own tests and diagnostics."""
    out = {"ok": True, "pid": os.getpid(), "cwd": os.getcwd(), "env": sorted(os.environ)}
    path = req.get("write")
    if path:
        try:
            with open(path, "w") as f:
                f.write("kevo sandbox self-test\n")
            out["write"] = "allowed"
        except OSError as e:
            out["write"] = f"denied: {e.strerror}"
    return out


def main():
    workdir = os.getcwd()
    arch = sys.argv[1] if len(sys.argv) > 1 else "sm_90"
    t0 = time.monotonic()
    try:
        server = Server(workdir)
        import_ms = (time.monotonic() - t0) * 1000.0
        warm = {"src": WARMUP_SRC, "kernel": "kevo_warmup", "signature": ["*fp32", "i32"],
                "constexprs": {"BLOCK": 128}, "arch": arch, "filename": "warmup.py"}
        server.compile(warm)
    except Exception as e:
        write_frame(PROTO_OUT, {"op": "hello", "ok": False,
                                "error": f"{type(e).__name__}: {e}"})
        return 1
    write_frame(PROTO_OUT, {"op": "hello", "ok": True, "triton": server.triton.__version__,
                            "python": sys.version.split()[0], "pid": os.getpid(),
                            "import_ms": import_ms,
                            "warmup_ms": (time.monotonic() - t0) * 1000.0 - import_ms})
    while True:
        req, _ = read_frame(PROTO_IN)
        if req is None or req.get("op") == "bye":
            return 0
        reply = {"id": req.get("id"), "op": req.get("op")}
        if req.get("op") == "selftest":
            reply.update(selftest(req))
            write_frame(PROTO_OUT, reply)
            continue
        if req.get("op") != "compile":
            reply.update(ok=False, error=f"unknown op '{req.get('op')}'")
            write_frame(PROTO_OUT, reply)
            continue
        try:
            info, cubin = server.compile(req)
            reply.update(ok=True, info=info)
            write_frame(PROTO_OUT, reply, [cubin])
        except Rejected as r:
            reply.update(ok=False, error=r.message,
                         diagnostics=[{"line": r.line, "col": r.col, "severity": r.kind,
                                       "message": r.message}])
            write_frame(PROTO_OUT, reply)
        except Exception as e:  # a bug in this server, not in the candidate
            reply.update(ok=False, error=f"internal: {type(e).__name__}: {e}")
            write_frame(PROTO_OUT, reply)


if __name__ == "__main__":
    sys.exit(main())
