"""kevo:launch
return {
  kernels = {
    {name = "log_softmax", grid = {M}, block = {32 * num_warps},
     args = {"x", "y", i32(M), i32(N)}},
  },
}
"""
# Triton seed for log_softmax: y = x - max(x) - log(sum(exp(x - max(x)))) row-wise over the
# last axis of an M x N tensor. One program per row. The first pass keeps a running maximum and
# a running sum of exponentials per lane (online softmax), so a row may be longer than BLOCK;
# the second pass writes x - lse. Knobs: BLOCK (a power of two), num_warps.
import triton
import triton.language as tl


@triton.jit
def log_softmax(x_ptr, y_ptr, M, N, BLOCK: tl.constexpr = 2048):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * N
    y_row = y_ptr + row * N
    run_max = tl.full([BLOCK], float("-inf"), tl.float32)
    run_sum = tl.zeros([BLOCK], tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < N, other=float("-inf"))
        new_max = tl.maximum(run_max, x)
        # lanes that have seen only masked values keep max = -inf: no exp(-inf - -inf) there
        scale = tl.where(new_max == float("-inf"), 1.0, tl.exp(run_max - new_max))
        term = tl.where(x == float("-inf"), 0.0, tl.exp(x - new_max))
        run_sum = run_sum * scale + term
        run_max = new_max
    row_max = tl.max(run_max, axis=0)
    lane_sum = tl.where(run_max == float("-inf"), 0.0, run_sum * tl.exp(run_max - row_max))
    lse = row_max + tl.log(tl.sum(lane_sum, axis=0))
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < N, other=0.0)
        tl.store(y_row + cols, x - lse, mask=cols < N)
