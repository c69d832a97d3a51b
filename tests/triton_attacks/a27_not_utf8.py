# attack: a byte that is not UTF-8 (in a comment): the server could not read the request and died
# mode: checked
# expect: error a byte that is not UTF-8
import triton
import triton.language as tl

# ÿþ


@triton.jit
def k(x_ptr):
    tl.store(x_ptr, 1.0)
