"""kevo:launch
return {
  kernels = {
    {name = "layernorm", grid = {M}, block = {32 * num_warps},
     args = {"x", "weight", "bias", "y", i32(M), i32(N)}},
  },
}
"""
# Triton seed for layernorm: one program per row, eps 1e-5, biased variance. The statistics
# come from one read: sums of (x - shift) and (x - shift)^2 with shift = the row's first
# element, so E[d^2] - E[d]^2 does not cancel when the mean is large against the spread; the
# second loop writes (x - mean) * rstd * weight + bias. Knobs: BLOCK (a power of two),
# num_warps.
import triton
import triton.language as tl

EPS = tl.constexpr(1e-5)


@triton.jit
def layernorm(x_ptr, w_ptr, b_ptr, y_ptr, M, N, BLOCK: tl.constexpr = 2048):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * N
    y_row = y_ptr + row * N
    shift = tl.load(x_row)
    acc = tl.zeros([BLOCK], tl.float32)
    acc2 = tl.zeros([BLOCK], tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        d = tl.where(mask, tl.load(x_row + cols, mask=mask, other=0.0) - shift, 0.0)
        acc += d
        acc2 += d * d
    dmean = tl.sum(acc, axis=0) / N
    var = tl.maximum(tl.sum(acc2, axis=0) / N - dmean * dmean, 0.0)
    mean = shift + dmean
    rstd = tl.math.rsqrt(var + EPS)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=0.0)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0)
        tl.store(y_row + cols, (x - mean) * rstd * w + b, mask=mask)
