# attack: an f-string (format specs run code)
# mode: checked
# expect: refused JoinedStr
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    tl.static_print(f'{x_ptr!r}')
