# attack: posix_spawn
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
os.posix_spawn('/bin/sleep', ['sleep', '3600'], {})
raise B["LookupError"]
