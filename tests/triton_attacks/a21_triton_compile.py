# attack: triton.compile from a kernel
# mode: checked
# expect: refused triton.compile
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    triton.compile('/etc/passwd')
