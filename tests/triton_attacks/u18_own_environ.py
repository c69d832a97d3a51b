# attack: its own environment is empty and /proc is closed
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
if len(os.environ):
    raise B["LookupError"]
B['open']('/proc/self/environ', 'rb').read()
raise B["LookupError"]
