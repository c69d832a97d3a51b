# attack: route 3: a from-import after the kernel
# mode: checked
# expect: refused is not allowed
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    compile('x')


from triton import compile
