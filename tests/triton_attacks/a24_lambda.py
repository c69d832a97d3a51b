# attack: a lambda
# mode: checked
# expect: refused Lambda
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    f = lambda: 0
