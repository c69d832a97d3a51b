"""kevo:launch
return {
  kernels = {
    {name = "rope_bf16", grid = {T}, block = {32 * num_warps},
     args = {"positions", "cos_sin", "q", "k", "q_out", "k_out", i32(T), i32(HQ), i32(HK),
             i32(D)}},
  },
}
"""
# Triton seed for rope_bf16: rotary embedding, GPT-NeoX layout (dimension i pairs with i + D/2),
# token t rotated by row positions[t] of cos_sin (cos in the first D/2 columns, sin in the rest).
# One program per token: its cos and sin are loaded once, then q's heads and k's heads in tiles
# of BLOCK_H heads x BLOCK_D pairs. kevo passes sizes without divisibility hints, so where
# D % 16 == 0 the strides are rebuilt from (D // 16) * 16 and Triton loads 8 bf16 at once.
# Knobs: BLOCK_H, BLOCK_D (powers of two; BLOCK_D >= D / 2 covers a head in one tile), num_warps.
import triton
import triton.language as tl


@triton.jit
def _heads(src, dst, H, D, half, c, s, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr):
    for h0 in range(0, H, BLOCK_H):
        for d0 in range(0, half, BLOCK_D):
            hs = h0 + tl.arange(0, BLOCK_H)
            ds = d0 + tl.arange(0, BLOCK_D)
            mask = (hs[:, None] < H) & (ds[None, :] < half)
            p = hs[:, None] * D + ds[None, :]
            x1 = tl.load(src + p, mask=mask, other=0.0).to(tl.float32)
            x2 = tl.load(src + p + half, mask=mask, other=0.0).to(tl.float32)
            cc = tl.load(c + ds, mask=ds < half, other=0.0)[None, :]
            ss = tl.load(s + ds, mask=ds < half, other=0.0)[None, :]
            tl.store(dst + p, (x1 * cc - x2 * ss).to(tl.bfloat16), mask=mask)
            tl.store(dst + p + half, (x2 * cc + x1 * ss).to(tl.bfloat16), mask=mask)


@triton.jit
def _token(pos_ptr, cs_ptr, q_ptr, k_ptr, qo_ptr, ko_ptr, t, HQ, HK, D,
           BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr):
    half = D // 2
    cs = cs_ptr + tl.load(pos_ptr + t) * D
    qo = t * HQ * D
    ko = t * HK * D
    _heads(q_ptr + qo, qo_ptr + qo, HQ, D, half, cs, cs + half, BLOCK_H, BLOCK_D)
    _heads(k_ptr + ko, ko_ptr + ko, HK, D, half, cs, cs + half, BLOCK_H, BLOCK_D)


@triton.jit
def rope_bf16(pos_ptr, cs_ptr, q_ptr, k_ptr, qo_ptr, ko_ptr, T, HQ, HK, D,
              BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    if D % 16 == 0:
        d16 = (D // 16) * 16
        _token(pos_ptr, cs_ptr, q_ptr, k_ptr, qo_ptr, ko_ptr, t, HQ, HK, d16, BLOCK_H, BLOCK_D)
    else:
        _token(pos_ptr, cs_ptr, q_ptr, k_ptr, qo_ptr, ko_ptr, t, HQ, HK, D, BLOCK_H, BLOCK_D)
