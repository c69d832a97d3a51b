# attack: clear the parent-death signal, so that killing kevo and the server leaves this process alive
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
ctypes = B["__import__"]("ctypes")
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(1, 0, 0, 0, 0) != 0:  # PR_SET_PDEATHSIG, 0
    raise B["PermissionError"]
raise B["LookupError"]
