# attack: reading kevo's environment (the API key) through /proc
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
B['open']('/proc/@KEVO_PID@/environ', 'rb').read()
raise B["LookupError"]
