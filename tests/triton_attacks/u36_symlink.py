# attack: a link to a file outside
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
os.symlink('/etc/shadow', '@CANARY@/link')
raise B["LookupError"]
