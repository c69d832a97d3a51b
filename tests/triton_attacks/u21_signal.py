# attack: signal kevo
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
os.kill(@KEVO_PID@, 0)
raise B["LookupError"]
