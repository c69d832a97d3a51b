# attack: read kevo's memory (process_vm_readv)
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
ctypes = B["__import__"]("ctypes")
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(310 if os.uname().machine == 'x86_64' else 270, @KEVO_PID@, 0, 0, 0, 0, 0)
if r == -1 and ctypes.get_errno() in (1, 13):
    raise B["PermissionError"]()
raise B["LookupError"]  # escaped
