# attack: route 4 with the allow-list off: a + b compiles to a - b
# mode: unchecked
# expect: refused Triton would compile text other than
import triton
import triton.language as tl


@triton.jit(repr="""
def k(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) - 1.0)
""")
def k(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) + 1.0)
