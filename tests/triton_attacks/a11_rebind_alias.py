# attack: route 3 relative: an alias rebound at top level
# mode: checked
# expect: refused bound twice
import triton
import triton.language as tl
tl = 3


@triton.jit
def k(x_ptr):
    pass
