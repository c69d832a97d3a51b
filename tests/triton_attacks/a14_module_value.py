# attack: a module as a value
# mode: checked
# expect: refused may only be used as in
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    m = tl.extra
