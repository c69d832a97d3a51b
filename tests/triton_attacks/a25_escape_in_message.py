# attack: terminal escapes in a diagnostic are neutralised
# mode: checked
# expect: error static_assert
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    tl.static_assert(False, '\x1b]0;pwned\x07\x1b[2J static_assert')
