# attack: lower the compile server's own limits (prlimit on the parent: same user): every later compile fails
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
resource = B["__import__"]("resource")
resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (5, 5))
raise B["LookupError"]
