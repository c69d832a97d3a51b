# attack: route 1: a plain Python function of tl runs at compile time
# mode: checked
# expect: refused is not allowed in a kernel
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    t = tl.str_to_ty('*fp32')
