# attack: a SysV message queue: outlives its process, a channel to later compiles
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
ctypes = B["__import__"]("ctypes")
libc = ctypes.CDLL(None, use_errno=True)
q = libc.msgget(0, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
if q < 0:
    raise B["PermissionError"]
libc.msgctl(q, 0, None)  # IPC_RMID
raise B["LookupError"]
