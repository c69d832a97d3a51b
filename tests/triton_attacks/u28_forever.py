# attack: never finish
# mode: unchecked
# expect: timeout
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
while True:
    pass
