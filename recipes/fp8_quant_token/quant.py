"""kevo:launch
return {
  kernels = {
    {name = "fp8_quant_token", grid = {M}, block = {32 * num_warps},
     args = {"x", "q", "scale", i32(M), i32(N)}},
  },
}
"""
# Triton seed for fp8_quant_token: per-row dynamic FP8 e4m3 quantisation of bf16,
# scale = max(amax / 448, 1 / (448 * 512)), q = e4m3(x / scale) (saturating conversion). One
# program per row: a row of at most BLOCK elements is read once; a longer one is read twice (amax,
# then the conversion). kevo passes sizes without divisibility hints, so where N % 8 == 0 the row
# stride is rebuilt as (N // 8) * 8 (16-byte loads). Knobs: BLOCK (a power of two), num_warps.
import triton
import triton.language as tl


@triton.jit
def _row(x_row, q_row, s_ptr, N, BLOCK: tl.constexpr):
    if N <= BLOCK:
        cols = tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
        s = tl.maximum(tl.max(tl.abs(x), axis=0) / 448.0, 1.0 / (448.0 * 512.0))
        tl.store(s_ptr, s)
        tl.store(q_row + cols, (x * (1.0 / s)).to(tl.float8e4nv), mask=cols < N)
    else:
        m = tl.zeros([BLOCK], tl.float32)
        for start in range(0, N, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            m = tl.maximum(m, tl.abs(tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)))
        s = tl.maximum(tl.max(m, axis=0) / 448.0, 1.0 / (448.0 * 512.0))
        tl.store(s_ptr, s)
        for start in range(0, N, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
            tl.store(q_row + cols, (x * (1.0 / s)).to(tl.float8e4nv), mask=cols < N)


@triton.jit
def fp8_quant_token(x_ptr, q_ptr, s_ptr, M, N, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    if N % 8 == 0:
        n8 = (N // 8) * 8
        _row(x_ptr + row * n8, q_ptr + row * n8, s_ptr + row, n8, BLOCK)
    else:
        _row(x_ptr + row * N, q_ptr + row * N, s_ptr + row, N, BLOCK)
