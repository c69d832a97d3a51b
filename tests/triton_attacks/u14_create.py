# attack: creating a file in /tmp
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
f = B['open']('/tmp/kevo-triton-pwned-@KEVO_PID@', 'w')
raise B["LookupError"]
