# attack: filling its own directory
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
f = B['open']('fill.bin', 'wb')
f.write(bytes(1 << 30))
raise B["LookupError"]
