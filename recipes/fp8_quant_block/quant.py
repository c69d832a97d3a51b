"""kevo:launch
return {
  kernels = {
    {name = "fp8_quant_block", grid = {cdiv(M * (N // 128), GROUPS)}, block = {32 * num_warps},
     args = {"x", "q", "scale", i32(M), i32(N)}},
  },
}
"""
# Triton seed for fp8_quant_block: FP8 e4m3 quantisation in groups of 128 consecutive elements
# of a row, scale = max(amax / 448, 1 / (448 * 512)), q = e4m3(x / scale) (saturating). N is a
# multiple of 128, so the groups tile the flat array: a program takes GROUPS of them as a
# [GROUPS, 128] tile, reduces each row of the tile, converts and writes. Knobs: GROUPS (a power
# of two), num_warps.
import triton
import triton.language as tl


@triton.jit
def fp8_quant_block(x_ptr, q_ptr, s_ptr, M, N, GROUPS: tl.constexpr):
    total = M.to(tl.int64) * (N // 128)
    g = tl.program_id(0).to(tl.int64) * GROUPS + tl.arange(0, GROUPS)
    cols = tl.arange(0, 128)
    offs = g[:, None] * 128 + cols[None, :]
    mask = (g < total)[:, None]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    s = tl.maximum(tl.max(tl.abs(x), axis=1) / 448.0, 1.0 / (448.0 * 512.0))
    tl.store(s_ptr + g, s, mask=g < total)
    tl.store(q_ptr + offs, (x * (1.0 / s)[:, None]).to(tl.float8e4nv), mask=mask)
