"""kevo:launch
return {
  kernels = {
    {name = "topk", grid = {M}, block = {32 * num_warps},
     args = {"x", "values", "indices", i32(M), i32(V), i32(K)}},
  },
}
"""
# Triton seed for topk: the K (<= 64) largest of each row, sorted, ties to the lower index. Every
# element gets a unique 64-bit key (the value's bits made order-preserving, above
# 0xffffffff - index); one program per row streams it in BLOCK-element chunks, and a chunk with a
# key above the current 64th best is merged: its own top 64 (tl.topk) joined with the running 64
# and cut to 64 again. The first K keys are decoded and written. kevo passes sizes without
# divisibility hints, so where V % 4 == 0 the row stride is rebuilt as (V // 4) * 4 (16-byte
# loads). Knobs: BLOCK (a power of two >= 64), num_warps.
import triton
import triton.language as tl


@triton.jit
def _keys(x, idx):
    u = x.to(tl.uint32, bitcast=True)
    u = tl.where((u & 0x80000000) != 0, ~u, u | 0x80000000)
    return (u.to(tl.uint64) << 32) | (0xFFFFFFFF - idx.to(tl.uint32)).to(tl.uint64)


@triton.jit
def _row(x_row, v_row, i_row, V, K, BLOCK: tl.constexpr):
    top = tl.zeros([64], tl.uint64)
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < V, other=float("-inf"))
        keys = tl.where(cols < V, _keys(x, cols), 0)
        if tl.max(keys, axis=0) > tl.min(top, axis=0):
            both = tl.reshape(tl.join(top, tl.topk(keys, 64)), [128])
            top = tl.topk(both, 64)
    hi = (top >> 32).to(tl.uint32)
    u = tl.where((hi & 0x80000000) != 0, hi & 0x7FFFFFFF, ~hi)
    vals = u.to(tl.float32, bitcast=True)
    idx = (0xFFFFFFFF - (top & 0xFFFFFFFF).to(tl.uint32)).to(tl.int64)
    ks = tl.arange(0, 64)
    tl.store(v_row + ks, vals, mask=ks < K)
    tl.store(i_row + ks, idx, mask=ks < K)


@triton.jit
def topk(x_ptr, v_ptr, i_ptr, M, V, K, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    if V % 4 == 0:
        v4 = (V // 4) * 4
        _row(x_ptr + row * v4, v_ptr + row * K, i_ptr + row * K, v4, K, BLOCK)
    else:
        _row(x_ptr + row * V, v_ptr + row * K, i_ptr + row * K, V, K, BLOCK)
