"""kevo:launch
return {
  kernels = {
    {name = "row_sum", grid = {M}, block = {32 * num_warps},
     args = {"x", "y", i32(M), i32(N)}},
  },
}
"""
# Triton seed for row_sum: y[m] = sum of row m of an M x N tensor. One program per row; each
# lane accumulates its column of BLOCK-wide chunks, then one tree reduction.
# Knobs: BLOCK (a power of two), num_warps.
import triton
import triton.language as tl


@triton.jit
def row_sum(x_ptr, y_ptr, M, N, BLOCK: tl.constexpr = 2048):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * N
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_row + cols, mask=cols < N, other=0.0, eviction_policy="evict_first")
    tl.store(y_ptr + row, tl.sum(acc, axis=0))
