# attack: chmod outside the work directory
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
os.chmod('@CANARY@/file', 0o777)
raise B["LookupError"]
