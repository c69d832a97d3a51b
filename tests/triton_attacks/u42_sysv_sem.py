# attack: a SysV semaphore set: outlives its process
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
ctypes = B["__import__"]("ctypes")
libc = ctypes.CDLL(None, use_errno=True)
s = libc.semget(0, 1, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
if s < 0:
    raise B["PermissionError"]
libc.semctl(s, 0, 0)  # IPC_RMID
raise B["LookupError"]
