# attack: ** arguments
# mode: checked
# expect: refused '**' arguments
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    tl.store(x_ptr, 1.0, **x_ptr)
