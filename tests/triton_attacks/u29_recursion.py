# attack: recurse without end
# mode: unchecked
# expect: error RecursionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
def f(n):
    return f(n + 1)
f(0)
