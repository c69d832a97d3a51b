# attack: reading /etc/shadow
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
B['open']('/etc/shadow').read()
raise B["LookupError"]
