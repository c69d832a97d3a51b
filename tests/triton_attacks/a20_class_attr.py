# attack: a dunder attribute
# mode: checked
# expect: refused __class__
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    c = x_ptr.__class__
