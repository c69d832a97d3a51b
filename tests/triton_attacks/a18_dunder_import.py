# attack: __import__ in a kernel
# mode: checked
# expect: refused is not allowed
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    __import__('os').system('id')
