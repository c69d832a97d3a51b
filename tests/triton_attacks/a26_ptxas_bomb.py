# attack: PTX that keeps ptxas busy for minutes (a long inline asm: Triton's stages take seconds,
#   ptxas, run by the server itself, far longer): the server must answer at the deadline, warm
# mode: checked
# deadline: 10
# expect: timeout
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    offs = tl.arange(0, 128)
    x = tl.load(x_ptr + offs)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;" + " add.f32 $0, $0, $0;" * 400000, "=r,r", [x],
                                  dtype=tl.float32, is_pure=True, pack=1)
    tl.store(x_ptr + offs, y)
