"""kevo:launch
return {
  kernels = {
    {name = "silu_mul_bf16", grid = {cdiv(N, BLOCK), M}, block = {32 * num_warps},
     args = {"x", "y", i32(M), i32(N)}},
  },
}
"""
# Triton seed for silu_mul_bf16: y[m, n] = silu(x[m, n]) * x[m, N + n], f32 arithmetic, one
# program per (BLOCK columns, row). kevo passes sizes without divisibility hints, so where
# N % 8 == 0 the row strides are rebuilt from (N // 8) * 8 and Triton loads 8 bf16 (16 bytes) at
# once. Knobs: BLOCK (a power of two), num_warps.
import triton
import triton.language as tl


@triton.jit
def _part(x_row, y_row, N, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < N
    g = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(x_row + N + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_row + cols, (g / (1.0 + tl.exp(-g)) * u).to(tl.bfloat16), mask=mask)


@triton.jit
def silu_mul_bf16(x_ptr, y_ptr, M, N, BLOCK: tl.constexpr):
    row = tl.program_id(1).to(tl.int64)
    if N % 8 == 0:
        n8 = (N // 8) * 8
        _part(x_ptr + row * 2 * n8, y_ptr + row * n8, n8, BLOCK)
    else:
        _part(x_ptr + row * 2 * N, y_ptr + row * N, N, BLOCK)
