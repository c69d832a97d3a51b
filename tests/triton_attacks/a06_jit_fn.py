# attack: route 2: the Python function behind a JIT function
# mode: checked
# expect: refused attribute 'fn'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    f = tl.sum.fn
