# attack: route 2: a dunder travels as a string key
# mode: checked
# expect: refused string keys
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    g = x_ptr['__builtins__']
