# attack: a UDP socket
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
s = B['__import__']('socket').socket(2, 2)
s.sendto(b'x', ('127.0.0.1', 9))
raise B["LookupError"]
