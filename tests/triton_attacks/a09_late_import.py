# attack: route 3: an import after the kernel
# mode: checked
# expect: refused reaches module 'triton.runtime'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    t.runtime.cache.os.system('id')


import triton as t
