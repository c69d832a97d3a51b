"""kevo:launch
return {
  kernels = {
    {name = "grouped_gemm_bf16", grid = {(cdiv(T, BLOCK_M) + E) * cdiv(N, BLOCK_N)},
     block = {32 * num_warps}, args = {"A", "B", "counts", "C", i32(T), i32(E), i32(N), i32(K)}},
  },
}
"""
# Triton seed for grouped_gemm_bf16: expert e owns rows [o_e, o_{e+1}) of A and C (o_0 = 0,
# o_{e+1} = min(o_e + counts[e], T), the last expert everything left) and C[rows of e] =
# A[rows of e] @ B[e]. The grid has room for every expert's tile rows (cdiv(T, BLOCK_M) + E) times
# the tile columns, in grouped order (GROUP_M tile rows at a time); a program walks counts to find
# its expert, then runs the matmul_bf16 seed's tile on that expert's rows: tl.dot on the tensor
# cores, f32 accumulation, K in BLOCK_K steps (num_stages deep). kevo gives integer arguments no
# divisibility hints, so sizes are passed as (K // c) * c where the shape allows (16-byte loads,
# unmasked when K % BLOCK_K == 0 and N % 8 == 0). Knobs: BLOCK_M, BLOCK_N, BLOCK_K, num_warps,
# num_stages.
import triton
import triton.language as tl


@triton.jit
def _tile(a_ptr, b_ptr, c_ptr, M, N, K, pid_m, pid_n, BLOCK_M: tl.constexpr,
          BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
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
def _tile_even(a_ptr, b_ptr, c_ptr, M, N, K, pid_m, pid_n, BLOCK_M: tl.constexpr,
               BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
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
def grouped_gemm_bf16(a_ptr, b_ptr, cnt_ptr, c_ptr, T, E, N, K, BLOCK_M: tl.constexpr = 128,
                      BLOCK_N: tl.constexpr = 256, BLOCK_K: tl.constexpr = 64,
                      GROUP_M: tl.constexpr = 8):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(T, BLOCK_M) + E
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_m = tl.minimum(tiles_m - first_m, GROUP_M)
    tr = first_m + (pid % per_group) % group_m
    pid_n = (pid % per_group) // group_m
    # which expert owns tile row tr
    start = 0
    before = 0
    found = -1
    f_start = 0
    f_rows = 0
    f_before = 0
    for e in range(0, E):
        cnt = tl.maximum(tl.load(cnt_ptr + e), 0)
        end = tl.where(e == E - 1, T, tl.minimum(start + cnt, T))
        tiles = tl.cdiv(end - start, BLOCK_M)
        hit = (found < 0) & (tr < before + tiles)
        found = tl.where(hit, e, found)
        f_start = tl.where(hit, start, f_start)
        f_rows = tl.where(hit, end - start, f_rows)
        f_before = tl.where(hit, before, f_before)
        before += tiles
        start = end
    if found >= 0:
        pid_m = tr - f_before
        a_e = a_ptr + f_start.to(tl.int64) * K
        b_e = b_ptr + found.to(tl.int64) * K * N
        c_e = c_ptr + f_start.to(tl.int64) * N
        if (K % BLOCK_K == 0) and (N % 8 == 0):
            kk = (K // BLOCK_K) * BLOCK_K
            n8 = (N // 8) * 8
            _tile_even(a_ptr + f_start.to(tl.int64) * kk, b_ptr + found.to(tl.int64) * kk * n8,
                       c_ptr + f_start.to(tl.int64) * n8, f_rows, n8, kk, pid_m, pid_n,
                       BLOCK_M, BLOCK_N, BLOCK_K)
        elif (K % 8 == 0) and (N % 8 == 0):
            k8 = (K // 8) * 8
            n8 = (N // 8) * 8
            _tile(a_ptr + f_start.to(tl.int64) * k8, b_ptr + found.to(tl.int64) * k8 * n8,
                  c_ptr + f_start.to(tl.int64) * n8, f_rows, n8, k8, pid_m, pid_n,
                  BLOCK_M, BLOCK_N, BLOCK_K)
        else:
            _tile(a_e, b_e, c_e, f_rows, N, K, pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K)
