# attack: route 1: functools through tl.math
# mode: checked
# expect: refused is not allowed in a kernel
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    w = tl.math.wraps
