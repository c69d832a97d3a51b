# attack: route 2 relative: a JIT function bound to a local first
# mode: checked
# expect: refused attribute 'used_global_vals'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    f = tl.sum
    v = f.used_global_vals
