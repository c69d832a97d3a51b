# attack: route 1: a module registry through tl's attributes
# mode: checked
# expect: refused reaches module
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    m = tl.core.sys.modules
