# attack: exhaust memory
# mode: unchecked
# expect: error MemoryError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
x = B['bytearray'](1 << 42)
raise B["LookupError"]
