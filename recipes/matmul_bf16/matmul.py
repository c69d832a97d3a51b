"""kevo:launch
return {
  kernels = {
    {name = "matmul_bf16", grid = {cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)}, block = {32 * num_warps},
     args = {"A", "B", "C", i32(M), i32(N), i32(K)}},
  },
}
"""
# Triton seed for matmul_bf16: C = A @ B, bf16 row-major, f32 accumulation with tl.dot (tensor
# cores), one BLOCK_M x BLOCK_N tile of C per program, programs in grouped order (GROUP_M tile
# rows at a time, for L2 reuse of A and B), K streamed in BLOCK_K steps (num_stages deep
# software pipeline). kevo gives integer arguments no divisibility hints (one cubin serves every
# shape), so the kernel branches once on what the shape allows:
# - K a multiple of BLOCK_K and N of 8 (the benchmark shape): no mask in the K loop at all. Rows
#   and columns past M and N are clamped into range (they load real data that is never stored),
#   so every load is a plain 16-byte load Triton can pipeline into the tensor cores;
# - K and N multiples of 8: masked loads, still 16 bytes wide;
# - otherwise the same loop with element loads.
# Sizes are passed as (K // c) * c so that Triton's analysis sees their divisibility
# (tl.multiple_of on a scalar argument is dropped). Every index is below 2^31 at every shape of
# the recipe. Knobs: BLOCK_M, BLOCK_N, BLOCK_K (powers of two), num_warps, num_stages.
import triton
import triton.language as tl


@triton.jit
def _tile(a_ptr, b_ptr, c_ptr, M, N, K, pid_m, pid_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    c_ptrs = c_ptr + offs_m[:, None] * N + offs_n[None, :]
    tl.store(c_ptrs, acc.to(tl.bfloat16), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _tile_even(a_ptr, b_ptr, c_ptr, M, N, K, pid_m, pid_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # K % BLOCK_K == 0: rows past M and columns past N are clamped, so no load needs a mask
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.max_contiguous(tl.multiple_of(offs_m % M, BLOCK_M), BLOCK_M)
    cols = tl.max_contiguous(tl.multiple_of(offs_n % N, BLOCK_N), BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rows[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + cols[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K // BLOCK_K):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    c_ptrs = c_ptr + offs_m[:, None] * N + offs_n[None, :]
    tl.store(c_ptrs, acc.to(tl.bfloat16), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def matmul_bf16(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr = 128,
                BLOCK_N: tl.constexpr = 256, BLOCK_K: tl.constexpr = 64, GROUP_M: tl.constexpr = 8):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_m = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_m
    pid_n = (pid % per_group) // group_m
    if (K % BLOCK_K == 0) and (N % 8 == 0):
        _tile_even(a_ptr, b_ptr, c_ptr, M, (N // 8) * 8, (K // BLOCK_K) * BLOCK_K, pid_m, pid_n,
                   BLOCK_M, BLOCK_N, BLOCK_K)
    elif (K % 8 == 0) and (N % 8 == 0):
        _tile(a_ptr, b_ptr, c_ptr, M, (N // 8) * 8, (K // 8) * 8, pid_m, pid_n,
              BLOCK_M, BLOCK_N, BLOCK_K)
    else:
        _tile(a_ptr, b_ptr, c_ptr, M, N, K, pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K)
