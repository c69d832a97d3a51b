"""kevo:launch
return {
  kernels = {
    {name = "rmsnorm", grid = {M}, block = {32 * num_warps},
     args = {"x", "weight", "y", i32(M), i32(N)}},
  },
}
"""
# Triton seed for rmsnorm: one program per row, eps 1e-6: the sum of squares in one loop, then
# a second loop writes x * rstd * weight. Knobs: BLOCK (a power of two), num_warps.
import triton
import triton.language as tl

EPS = tl.constexpr(1e-6)


@triton.jit
def rmsnorm(x_ptr, w_ptr, y_ptr, M, N, BLOCK: tl.constexpr = 2048):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * N
    y_row = y_ptr + row * N
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < N, other=0.0)
        acc += x * x
    rstd = tl.math.rsqrt(tl.sum(acc, axis=0) / N + EPS)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=0.0)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        tl.store(y_row + cols, x * rstd * w, mask=mask)
