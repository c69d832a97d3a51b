# attack: subprocess (fork + exec)
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
B['__import__']('subprocess').run(['touch', '@CANARY@/pwned'])
raise B["LookupError"]
