# attack: renice the compile server (same user): later compiles slowed
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
os.setpriority(os.PRIO_PROCESS, os.getppid(), 19)
raise B["LookupError"]
