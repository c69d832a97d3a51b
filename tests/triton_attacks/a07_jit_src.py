# attack: route 2 relative: a JIT function's source
# mode: checked
# expect: refused attribute 'src'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    s = tl.sum.src
