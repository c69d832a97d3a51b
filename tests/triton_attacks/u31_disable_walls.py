# attack: switch the walls off for later compiles (it may, in its own process only)
# mode: unchecked
# expect: error LookupError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
sb = B['__import__']('sys').modules['triton_sandbox']
sb.confine = lambda *a, **k: 3
sb.seccomp_install = lambda *a: None
sb.landlock_restrict = lambda *a, **k: None
ck = B['__import__']('sys').modules['triton_check']
ck.check_source = lambda src, f, p: B['__import__']('ast').parse(src)
raise B["LookupError"]
