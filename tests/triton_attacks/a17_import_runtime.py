# attack: an import of a Triton submodule
# mode: checked
# expect: refused import of 'triton.runtime'
import triton.runtime
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    pass
