# attack: route 4 relative: a second kernel of the same name
# mode: checked
# expect: refused bound twice
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    tl.store(x_ptr, 1.0)


@triton.jit
def k(x_ptr):
    tl.store(x_ptr, 666.0)
