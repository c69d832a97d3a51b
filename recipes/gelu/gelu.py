"""kevo:launch
return {
  kernels = {
    {name = "gelu", grid = {cdiv(N, BLOCK)}, block = {32 * num_warps},
     args = {"x", "y", i32(N)}},
  },
}
"""
# Triton seed for gelu: y = 0.5 * x * (1 + erf(x / sqrt(2))) (the exact form), BLOCK elements
# per program. Knobs: BLOCK (a power of two), num_warps.
import triton
import triton.language as tl

SQRT1_2 = tl.constexpr(0.7071067811865476)


@triton.jit
def gelu(x_ptr, y_ptr, n, BLOCK: tl.constexpr = 512):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    # 0.5 * (1 + erf(x / sqrt(2))) as 0.5 * erfc(-x / sqrt(2)) would avoid cancellation for
    # very negative x; erf is accurate enough for the tolerance here (abs error < 1e-6)
    y = 0.5 * x * (1.0 + tl.math.erf(x * SQRT1_2))
    tl.store(y_ptr + offs, y, mask=mask)
