"""kevo:launch
return {
  kernels = {
    {name = "softmax_bf16", grid = {M}, block = {32 * num_warps},
     args = {"x", "y", i32(M), i32(N)}},
  },
}
"""
# Triton seed for softmax_bf16: one program per row, f32 arithmetic, bf16 in and out.
# kevo passes sizes without divisibility hints, so the row stride is rebuilt as (N // 8) * 8
# where N % 8 == 0: Triton then knows each row starts 16-byte aligned and loads 8 bf16 at once.
# A row of at most BLOCK elements is read once and kept in registers; a longer one takes an
# online (max, sum) loop and a second loop that reads it again (mostly from L2) and writes.
# Knobs: BLOCK (a power of two), num_warps.
import triton
import triton.language as tl


@triton.jit
def _row(x_row, y_row, N, BLOCK: tl.constexpr):
    if N <= BLOCK:
        cols = tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        y = e / tl.sum(e, axis=0)
        tl.store(y_row + cols, y.to(tl.bfloat16), mask=cols < N)
    else:
        run_max = tl.full([BLOCK], float("-inf"), tl.float32)
        run_sum = tl.zeros([BLOCK], tl.float32)
        for start in range(0, N, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(x_row + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
            new_max = tl.maximum(run_max, x)
            scale = tl.where(new_max == float("-inf"), 1.0, tl.exp(run_max - new_max))
            term = tl.where(x == float("-inf"), 0.0, tl.exp(x - new_max))
            run_sum = run_sum * scale + term
            run_max = new_max
        row_max = tl.max(run_max, axis=0)
        lane = tl.where(run_max == float("-inf"), 0.0, run_sum * tl.exp(run_max - row_max))
        inv = 1.0 / tl.sum(lane, axis=0)
        for start in range(0, N, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
            tl.store(y_row + cols, (tl.exp(x - row_max) * inv).to(tl.bfloat16), mask=cols < N)


@triton.jit
def softmax_bf16(x_ptr, y_ptr, M, N, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    if N % 8 == 0:
        n8 = (N // 8) * 8
        _row(x_ptr + row * n8, y_ptr + row * n8, n8, BLOCK)
    else:
        _row(x_ptr + row * N, y_ptr + row * N, N, BLOCK)
