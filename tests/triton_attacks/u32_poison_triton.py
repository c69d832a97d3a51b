# attack: poison Triton for later honest compiles (in its own process only)
# mode: unchecked
# expect: error LookupError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
cc = B['__import__']('sys').modules['triton.backends.nvidia.compiler']
cc.CUDABackend.make_ptx = lambda *a, **k: '.version 8.0'
tl.store = tl.atomic_add
raise B["LookupError"]
