# attack: setxattr outside the work directory
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
os.setxattr('@CANARY@/file', 'user.pwned', b'1')
raise B["LookupError"]
