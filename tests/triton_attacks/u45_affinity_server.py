# attack: pin the compile server to one CPU (sched_setaffinity on the parent: same user)
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
os.sched_setaffinity(os.getppid(), {0})
raise B["LookupError"]
