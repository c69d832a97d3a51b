# attack: exec in a kernel
# mode: checked
# expect: refused 'exec'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    exec('import os')
