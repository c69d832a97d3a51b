# attack: terminal injection (TIOCSTI) on every fd and /dev/tty
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
ctypes = B["__import__"]("ctypes")
libc = ctypes.CDLL(None, use_errno=True)
c = ctypes.c_char(b'x')
for fd in range(8):
    if libc.ioctl(fd, 0x5412, ctypes.byref(c)) == 0:
        raise B["LookupError"]
fd = os.open('/dev/tty', os.O_RDWR)
raise B["LookupError"]
