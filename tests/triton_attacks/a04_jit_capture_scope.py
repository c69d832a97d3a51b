# attack: route 2: a JIT function's globals
# mode: checked
# expect: refused attribute 'get_capture_scope'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    g = tl.sum.get_capture_scope()
