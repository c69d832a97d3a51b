# attack: a unix socket
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
s = B['__import__']('socket').socket(1, 1)
raise B["LookupError"]
