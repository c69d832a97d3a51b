# attack: route 4: a def hidden in a decorator's string
# mode: checked
# expect: refused bare @triton.jit
import triton
import triton.language as tl


@triton.jit(repr="""
def k(x_ptr):
    tl.store(x_ptr, 666.0)
""")
def k(x_ptr):
    tl.store(x_ptr, 1.0)
