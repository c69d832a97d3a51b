"""The allow-list a Triton candidate's syntax tree must pass (kevo's compile server, python/).

This is the second wall, not the first: the compile runs in a disposable, confined process
(triton_sandbox.py) whatever this check says. It runs inside that process too, on the one
parse of the one source kevo hashed and archived; the server compiles that same tree and
refuses a kernel whose source as Triton re-reads it differs from the tree checked here.

Rules, each refusal a Rejected with the line and column of the offence:
- Imports (top level only): triton, triton.language, math; all imports are read before any
  function is checked, so an import after a kernel still binds what the kernel sees. No name
  is bound twice at top level (an alias cannot be rebound, a kernel cannot be replaced).
- Top level: docstrings and strings (the kevo:launch block), constants (literals or
  tl.constexpr(literal)), functions decorated with exactly a bare @triton.jit.
- In a kernel: no imports, classes, nested functions, lambdas, try, global, del, dicts or sets;
  no name or attribute that is a dunder or starts with '_'; none of Python's escape hatches
  (exec, eval, open, getattr, globals, ...); no string keys into anything (x["__globals__"]).
- An attribute chain rooted at an imported module walks modules only through the allowed ones,
  and takes from a module only what a kernel can use: Triton builtins and JIT functions, dtypes,
  constants, Triton's own types (tl.constexpr, tl.static_range, ...), and from Python's math
  its C functions. From there, and on any other value, only the attributes Triton's tensors,
  dtypes and constexprs define (x.dtype, x.to, tl.float32.primitive_bitwidth): never the ones
  that lead to a function's globals or code (fn, src, get_capture_scope, ...), so no route
  reaches a module registry, a globals dict or builtins.
- A module is never a value (t = tl, f(tl.math)).
"""

import ast
import copy
import types

ALLOWED_IMPORTS = ("triton", "triton.language", "math")
ALLOWED_MODULES = ("triton", "triton.language", "triton.language.math", "triton.language.extra",
                   "triton.language.extra.cuda", "triton.language.extra.libdevice",
                   "triton.language.extra.cuda.libdevice", "math")
# What a candidate may take from the triton package itself.
TRITON_ROOT_ATTRS = frozenset(("jit", "language", "cdiv", "next_power_of_2"))
# Triton's own types a kernel may name (tl.constexpr, tl.static_range(...)).
TL_TYPES = frozenset(("constexpr", "dtype", "pointer_type", "block_type", "tensor", "range",
                      "static_range", "tuple", "const", "condition", "slice", "PropagateNan"))
# Attributes set in the constructors of tensors, dtypes and constexprs (not in dir(class)).
INSTANCE_ATTRS = frozenset(("dtype", "shape", "type", "numel", "name", "value", "element_ty",
                            "address_space", "primitive_bitwidth", "int_bitwidth",
                            "int_signedness", "fp_mantissa_width", "exponent_bias", "const"))
# Public attributes of those classes that reach Triton's internals rather than a kernel's API.
INTERNAL_ATTRS = frozenset(("handle", "to_ir", "mangle", "codegen_name", "cache_key_part",
                            "fn", "src", "get_capture_scope", "used_global_vals", "module",
                            "modules", "globals", "builtins", "parse", "cache", "run",
                            "warmup", "preload", "launcher", "params"))
FORBIDDEN_NAMES = frozenset((
    "exec", "eval", "open", "compile", "__import__", "getattr", "setattr", "delattr", "hasattr",
    "globals", "locals", "vars", "dir", "breakpoint", "input", "help", "exit", "quit", "type",
    "object", "super", "memoryview", "classmethod", "staticmethod", "property", "__builtins__",
    "__loader__", "__spec__", "__file__", "__name__", "__dict__", "id", "print", "format",
    "repr", "str", "bytes", "bytearray", "iter", "next", "map", "filter", "sorted", "reversed",
    "callable", "issubclass", "frozenset", "set", "hash", "chr", "ord", "ascii", "sys", "os",
    "builtins", "importlib", "modules"))
FORBIDDEN_BODY_NODES = (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.ClassDef,
                        ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Await, ast.Yield,
                        ast.YieldFrom, ast.Try, ast.Delete, ast.AsyncFor, ast.AsyncWith,
                        ast.Dict, ast.DictComp, ast.Set, ast.SetComp, ast.GeneratorExp,
                        ast.ListComp, ast.NamedExpr, ast.JoinedStr, ast.Starred, ast.With)
SAFE_BUILTINS = ("range", "min", "max", "len", "int", "float", "bool", "tuple", "list",
                 "abs", "isinstance", "enumerate", "zip", "True", "False", "None")


class Rejected(Exception):
    """A source broke a rule, or failed to compile: carries line, column and a message."""

    def __init__(self, line, col, message, kind="error"):
        super().__init__(message)
        self.line, self.col, self.message, self.kind = line, col, message, kind


def reject(node, message):
    raise Rejected(getattr(node, "lineno", 0), getattr(node, "col_offset", -1) + 1, message)


def is_constant_expr(node, depth=0):
    """A literal: numbers, strings, booleans, None, +/- of them, tuples/lists of them."""
    if depth > 8:
        return False
    if isinstance(node, ast.Constant):
        return not isinstance(node.value, bytes)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        return is_constant_expr(node.operand, depth + 1)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(is_constant_expr(e, depth + 1) for e in node.elts)
    return False


class Policy:
    """What a kernel may reach, computed once from the real modules (in the zygote)."""

    def __init__(self, modules):
        from triton.runtime.jit import JITCallable
        tl = modules["triton.language"]
        self.modules = modules
        self.jit = modules["triton"].jit
        self.constexpr = tl.constexpr
        attrs = set(INSTANCE_ATTRS)
        for cls in (tl.tensor, tl.dtype, tl.pointer_type, tl.block_type, tl.constexpr):
            attrs.update(n for n in dir(cls) if not n.startswith("_"))
        self.value_attrs = frozenset(attrs - INTERNAL_ATTRS)
        self.types = frozenset(id(getattr(tl, n)) for n in TL_TYPES if hasattr(tl, n))
        self.JITCallable = JITCallable

    def leaf_ok(self, module, name, value):
        """May a kernel take `name` (= value, not a module) from `module`?"""
        if module is self.modules["triton"]:
            return name in TRITON_ROOT_ATTRS
        if module.__name__ == "math":
            return isinstance(value, (types.BuiltinFunctionType, int, float))
        tl = self.modules["triton.language"]
        return (isinstance(value, (self.JITCallable, tl.dtype, tl.constexpr, int, float, bool))
                or getattr(value, "__triton_builtin__", False) or id(value) in self.types)


class Checker:

    def __init__(self, policy):
        self.policy = policy
        self.aliases = {}  # local name -> the module or object it was imported as
        self.bound = set()  # every top-level name

    def check(self, tree):
        body = list(tree.body)
        for stmt in body:  # pass 1: imports, wherever they are
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self.check_import(stmt)
        for stmt in body:  # pass 2: everything else
            if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self.check_top(stmt)

    def bind(self, node, name):
        if name in self.bound or name.startswith("__") or name in FORBIDDEN_NAMES:
            reject(node, f"the name '{name}' may not be bound here (bound twice, or reserved)")
        self.bound.add(name)

    def check_import(self, stmt):
        mods = self.policy.modules
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                if a.name not in ALLOWED_IMPORTS:
                    reject(stmt, f"import of '{a.name}' is not allowed (only triton, "
                           "triton.language and math)")
                name = a.asname or a.name.split(".")[0]
                self.bind(stmt, name)
                self.aliases[name] = mods[a.name] if a.asname else mods[name]
            return
        if stmt.level or stmt.module not in ALLOWED_IMPORTS:
            reject(stmt, f"import from '{stmt.module or '.'}' is not allowed (only triton, "
                   "triton.language and math)")
        module = mods[stmt.module]
        for a in stmt.names:
            if a.name == "*" or a.name.startswith("_"):
                reject(stmt, f"'from {stmt.module} import {a.name}' is not allowed")
            value = getattr(module, a.name, None)
            if isinstance(value, types.ModuleType):
                if value.__name__ not in ALLOWED_MODULES:
                    reject(stmt, f"'{stmt.module}.{a.name}' reaches module '{value.__name__}', "
                           "which is not allowed")
            elif value is None or not self.policy.leaf_ok(module, a.name, value):
                reject(stmt, f"'from {stmt.module} import {a.name}' is not allowed")
            self.bind(stmt, a.asname or a.name)
            self.aliases[a.asname or a.name] = value

    def check_top(self, stmt):
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and \
                isinstance(stmt.value.value, str):
            return  # a docstring or the kevo:launch block
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if not isinstance(t, ast.Name):
                    reject(t, "a top-level assignment must bind a plain new name")
                self.bind(t, t.id)
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
            self.check_expr(node.func)
            return self.resolve(node.func) is self.policy.constexpr
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
            if not isinstance(obj, types.ModuleType):
                return None
            obj = getattr(obj, part, None)
        return obj

    def check_decorator(self, dec):
        if isinstance(dec, ast.Call) or self.resolve(dec) is not self.policy.jit:
            reject(dec, "the only decorator allowed is a bare @triton.jit")
        self.check_expr(dec)

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
        self.bind(fn, fn.name)
        args = fn.args
        if args.vararg or args.kwarg:
            reject(fn, "a kernel takes no *args or **kwargs")
        for a in args.posonlyargs + args.args + args.kwonlyargs:
            if a.arg.startswith("__") or a.arg in FORBIDDEN_NAMES:
                reject(a, f"parameter name '{a.arg}' is not allowed")
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
                self.check_chain(node, id(node) in attr_bases)
            elif isinstance(node, ast.Name):
                if node.id in FORBIDDEN_NAMES or node.id.startswith("__"):
                    reject(node, f"name '{node.id}' is not allowed")
                if isinstance(self.aliases.get(node.id), types.ModuleType) and \
                        id(node) not in attr_bases:
                    reject(node, f"module '{node.id}' may only be used as in {node.id}.name")
            elif isinstance(node, ast.Subscript):
                key = node.slice
                if any(isinstance(k, ast.Constant) and isinstance(k.value, (str, bytes))
                       for k in ast.walk(key)):
                    reject(node, "string keys are not allowed in a kernel")
            elif isinstance(node, ast.keyword) and node.arg is None:
                reject(node.value, "'**' arguments are not allowed in a kernel")
            elif isinstance(node, ast.Constant) and isinstance(node.value, bytes):
                reject(node, "bytes literals are not allowed")

    def check_chain(self, node, is_base):
        """Checks the last step of an attribute chain: from a module, only what leaf_ok allows
        (or an allowed module, which must be followed by another attribute); from anything
        else, only the attributes of Triton's tensors, dtypes and constexprs."""
        parts, base = [], node
        while isinstance(base, ast.Attribute):
            parts.append(base.attr)
            base = base.value
        parts.reverse()
        if isinstance(base, ast.Name) and base.id in self.aliases:
            obj, what = self.aliases[base.id], base.id
        else:
            obj, what = None, None
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if isinstance(obj, types.ModuleType):
                value = getattr(obj, part, None)
                where = f"{what}.{part}"
                if isinstance(value, types.ModuleType):
                    if value.__name__ not in ALLOWED_MODULES:
                        reject(node, f"'{where}' reaches module '{value.__name__}', which is "
                               "not allowed")
                    if last and not is_base:
                        reject(node, f"module '{where}' may only be used as in {where}.name")
                elif value is None or not self.policy.leaf_ok(obj, part, value):
                    reject(node, f"'{where}' is not allowed in a kernel")
                obj, what = value, where
            else:
                if part not in self.policy.value_attrs:
                    reject(node, f"attribute '{part}' is not allowed (a kernel may use only "
                           "the attributes of Triton tensors, dtypes and constexprs)")
                obj = None


def check_source(src, filename, policy):
    """Parses and checks a source; returns the tree, raises Rejected at the first problem."""
    try:
        tree = ast.parse(src, filename=filename)
    except SyntaxError as e:
        raise Rejected(e.lineno or 0, e.offset or 0, f"syntax error: {e.msg}")
    except (ValueError, RecursionError, MemoryError) as e:
        raise Rejected(0, 0, f"the source cannot be parsed: {type(e).__name__}")
    Checker(policy).check(tree)
    return tree


def without_decorators(fn):
    """A FunctionDef as Triton parses it back (from the line of its `def`)."""
    bare = copy.copy(fn)
    bare.decorator_list = []
    return ast.dump(bare)

