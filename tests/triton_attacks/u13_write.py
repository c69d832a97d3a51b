# attack: writing a file outside the work directory
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
f = B['open']('@CANARY@/file', 'a')
raise B["LookupError"]
