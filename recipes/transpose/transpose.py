"""kevo:launch
return {
  kernels = {
    {name = "transpose", grid = {cdiv(M, BLOCK_M), cdiv(N, BLOCK_N)}, block = {32 * num_warps},
     args = {"x", "y", i32(M), i32(N)}},
  },
}
"""
# Triton seed for transpose: y[n, m] = x[m, n]. Each program loads a BLOCK_M x BLOCK_N tile of x
# (coalesced along N), transposes it in registers and shared memory (tl.trans: Triton picks the
# layout change), and stores it into y (coalesced along M). Offsets are 64-bit.
# Knobs: BLOCK_M, BLOCK_N (powers of two), num_warps.
import triton
import triton.language as tl


@triton.jit
def transpose(x_ptr, y_ptr, M, N, BLOCK_M: tl.constexpr = 64, BLOCK_N: tl.constexpr = 64):
    rm = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tile = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=mask)
    mask_t = (rn[:, None] < N) & (rm[None, :] < M)
    tl.store(y_ptr + rn[:, None] * M + rm[None, :], tl.trans(tile), mask=mask_t)
