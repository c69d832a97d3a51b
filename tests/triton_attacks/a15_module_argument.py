# attack: a module as an argument
# mode: checked
# expect: refused may only be used as in
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    tl.static_print(tl)
