# attack: signal every process the user may signal (kill -1): other compile servers, kevo when unprivileged
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
os.kill(-1, 0)
raise B["LookupError"]
