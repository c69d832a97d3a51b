# attack: SysV shared memory: a segment outlives its process and is not under RLIMIT_AS
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
ctypes = B["__import__"]("ctypes")
libc = ctypes.CDLL(None, use_errno=True)
shm = libc.shmget(0, 1 << 20, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
if shm < 0:
    raise B["PermissionError"]
libc.shmctl(shm, 0, None)  # IPC_RMID: the test leaves nothing behind
raise B["LookupError"]
