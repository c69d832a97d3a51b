# attack: route 4 through line numbers: form feeds in a comment are line breaks to linecache
# (str.splitlines) but not to the parser, so the kernel's lines as Triton re-reads them are the
# text of the string below: a + b would compile to a - b (a fast text comparison that trusted
# line numbers would let it through)
# mode: checked
# expect: refused Triton would compile text other than
import triton
import triton.language as tl

#
DECOY = """
@triton.jit
def k(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) - 1.0)
"""
@triton.jit
def k(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) + 1.0)
