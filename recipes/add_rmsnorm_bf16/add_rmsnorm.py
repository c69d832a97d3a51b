"""kevo:launch
return {
  kernels = {
    {name = "add_rmsnorm_bf16", grid = {M}, block = {32 * num_warps},
     args = {"x", "residual", "weight", "y", "residual_out", i32(M), i32(N)}},
  },
}
"""
# Triton seed for add_rmsnorm_bf16: h = bf16(x + residual) goes to residual_out, and
# y = h / sqrt(mean(h^2) + 1e-6) * weight, one program per row, f32 arithmetic. kevo passes
# sizes without divisibility hints, so where N % 8 == 0 the row stride is rebuilt as
# (N // 8) * 8 and Triton loads 8 bf16 (16 bytes) at once. A row of at most BLOCK elements stays
# in registers; a longer one reads h back from residual_out in its second loop.
# Knobs: BLOCK (a power of two), num_warps.
import triton
import triton.language as tl


@triton.jit
def _row(x_row, r_row, w_ptr, y_row, h_row, N, BLOCK: tl.constexpr):
    if N <= BLOCK:
        cols = tl.arange(0, BLOCK)
        mask = cols < N
        h = (tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
             + tl.load(r_row + cols, mask=mask, other=0.0).to(tl.float32)).to(tl.bfloat16)
        tl.store(h_row + cols, h, mask=mask)
        hf = h.to(tl.float32)
        rstd = tl.math.rsqrt(tl.sum(hf * hf, axis=0) / N + 1e-6)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (hf * rstd * w).to(tl.bfloat16), mask=mask)
    else:
        acc = tl.zeros([BLOCK], tl.float32)
        for start in range(0, N, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            mask = cols < N
            h = (tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
                 + tl.load(r_row + cols, mask=mask, other=0.0).to(tl.float32)).to(tl.bfloat16)
            tl.store(h_row + cols, h, mask=mask)
            hf = h.to(tl.float32)
            acc += hf * hf
        rstd = tl.math.rsqrt(tl.sum(acc, axis=0) / N + 1e-6)
        for start in range(0, N, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            mask = cols < N
            hf = tl.load(h_row + cols, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
            tl.store(y_row + cols, (hf * rstd * w).to(tl.bfloat16), mask=mask)


@triton.jit
def add_rmsnorm_bf16(x_ptr, r_ptr, w_ptr, y_ptr, h_ptr, M, N, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    if N % 8 == 0:
        n8 = (N // 8) * 8
        o = row * n8
        _row(x_ptr + o, r_ptr + o, w_ptr, y_ptr + o, h_ptr + o, n8, BLOCK)
    else:
        o = row * N
        _row(x_ptr + o, r_ptr + o, w_ptr, y_ptr + o, h_ptr + o, N, BLOCK)
