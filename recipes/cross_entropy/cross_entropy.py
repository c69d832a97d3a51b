"""kevo:launch
return {
  kernels = {
    {name = "cross_entropy", grid = {M}, block = {32 * num_warps},
     args = {"logits", "target", "loss", i32(M), i32(C)}},
  },
}
"""
# Triton seed for cross_entropy (no reduction): loss[m] = logsumexp(logits[m, :]) -
# logits[m, target[m]]. One program per row; one pass keeps a running maximum and a running
# sum of exponentials per lane (online softmax), merged at the end.
# Knobs: BLOCK (a power of two), num_warps.
import triton
import triton.language as tl


@triton.jit
def cross_entropy(x_ptr, t_ptr, loss_ptr, M, C, BLOCK: tl.constexpr = 2048):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * C
    run_max = tl.full([BLOCK], float("-inf"), tl.float32)
    run_sum = tl.zeros([BLOCK], tl.float32)
    for start in range(0, C, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < C, other=float("-inf"),
                    eviction_policy="evict_first")
        new_max = tl.maximum(run_max, x)
        # lanes that have seen only masked values keep max = -inf: no exp(-inf - -inf) there
        scale = tl.where(new_max == float("-inf"), 1.0, tl.exp(run_max - new_max))
        term = tl.where(x == float("-inf"), 0.0, tl.exp(x - new_max))
        run_sum = run_sum * scale + term
        run_max = new_max
    row_max = tl.max(run_max, axis=0)
    lane_sum = tl.where(run_max == float("-inf"), 0.0, run_sum * tl.exp(run_max - row_max))
    lse = row_max + tl.log(tl.sum(lane_sum, axis=0))
    t = tl.load(t_ptr + row)
    tl.store(loss_ptr + row, lse - tl.load(x_row + t))
