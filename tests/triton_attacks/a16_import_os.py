# attack: an import of os
# mode: checked
# expect: refused import of 'os'
import os
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    pass
