# attack: a user namespace (unshare)
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
ctypes = B['__import__']('ctypes')
libc = ctypes.CDLL(None, use_errno=True)
r = libc.unshare(0x10000000)
if r == -1 and ctypes.get_errno() in (1, 13):
    raise B["PermissionError"]()
raise B["LookupError"]
