# attack: write into kevo's compile cache
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
f = B['open']('@CACHE@/poison.cubin', 'wb')
raise B["LookupError"]
