/* grouped_gemm_bf16 seed: C[rows of e] = A[rows of e] @ B[e] for every expert e, on the tensor
 * cores through mma.sync m16n8k16 (bf16 in, f32 accumulators): the matmul_bf16 seed's tile
 * (8 warps, 2 along M x 4 along N; a cp.async ring of STAGES shared buffers; ldmatrix with
 * 16-byte padded rows) run over a flattened list of (expert, tile row) pairs.
 *  - Expert e owns rows [o_e, o_{e+1}) of A and C, o_0 = 0, o_{e+1} = min(o_e + counts[e], T),
 *    the last expert everything left (o_E = T). A block finds its expert by walking counts
 *    (E <= 256 loads from L1, nothing next to a K loop).
 *  - The grid has room for every tile: cdiv(T, BM) + E tile rows (each expert wastes at most one
 *    partial tile row) times cdiv(N, BN) tile columns; blocks past the last tile return.
 *  - Blocks run in grouped order (GROUP_M tile rows sweep the tile columns together) so the
 *    same expert's B tiles are reused out of L2.
 *  - Any T, N, K: unaligned rows are loaded element by element; C's stores are guarded.
 * Knobs: BM (64, 128), BN (64, 128, 256), BK (32, 64), STAGES (2 to 4). Dynamic shared memory:
 * STAGES * (BM * (BK + 8) + BK * (BN + 8)) * 2 bytes. */
/* kevo:launch
local smem = STAGES * (BM * (BK + 8) + BK * (BN + 8)) * 2
return {
  kernels = {
    {name = "grouped_gemm_bf16", grid = {(cdiv(T, BM) + E) * cdiv(N, BN)}, block = {256},
     shared = smem, args = {"A", "B", "counts", "C", i32(T), i32(E), i32(N), i32(K)}},
  },
}
*/

#include <cuda_bf16.h>

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif

#define THREADS 256
#define WARPS_M 2
#define WARPS_N 4
#define WM (BM / WARPS_M) /* warp tile */
#define WN (BN / WARPS_N)
#define MI (WM / 16) /* mma tiles per warp */
#define NI (WN / 8)
#define AS (BK + 8) /* shared row strides in elements: 16 bytes of padding */
#define BS (BN + 8)
#define A_STAGE (BM * AS)
#define B_STAGE (BK * BS)

#if WM % 16 != 0 || WN % 16 != 0 || BK % 16 != 0
#error "BM / 2 and BN / 4 must be multiples of 16, BK a multiple of 16"
#endif
#if (BM * BK / 8) % THREADS != 0 || (BK * BN / 8) % THREADS != 0
#error "every thread must load the same number of 16-byte chunks per tile"
#endif
#if STAGES < 2
#error "STAGES must be at least 2"
#endif

typedef unsigned short u16; /* bf16 bits */

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

/* 16 bytes global -> shared, asynchronously; src_bytes < 16 fills the rest with zeros. */
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

/* d += a (16 x 16, row-major fragment) * b (16 x 8, column-major fragment) */
__device__ __forceinline__ void mma_bf16(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                         unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* 8 consecutive elements of row `row` (of `rows`, `cols` wide) from column col, zeros outside,
 * element by element: the path for rows that are not 16-byte aligned. */
__device__ __forceinline__ void copy8(u16* dst, const u16* src, int row, int rows, int col,
                                      int cols) {
  __align__(16) u16 v[8];
#pragma unroll
  for (int e = 0; e < 8; e++)
    v[e] = (row < rows && col + e < cols) ? src[(long long)row * cols + col + e] : (u16)0;
  *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(v);
}

/* Fills one stage: the A tile (rows m0.., columns k0..) and the B tile (rows k0.., columns n0..). */
__device__ __forceinline__ void load_stage(u16* as, u16* bs, const u16* A, const u16* B, int M,
                                           int N, int K, int m0, int n0, int k0, bool fast) {
  const int tid = threadIdx.x;
#pragma unroll
  for (int c = 0; c < BM * BK / 8 / THREADS; c++) {
    const int chunk = tid + c * THREADS;
    const int r = chunk / (BK / 8), kc = (chunk % (BK / 8)) * 8;
    u16* dst = as + r * AS + kc;
    if (fast) {
      const bool in = m0 + r < M && k0 + kc < K; /* K % 8 == 0: a chunk is all in or all out */
      cp_async16(smem_addr(dst), in ? A + (long long)(m0 + r) * K + k0 + kc : A, in ? 16 : 0);
    } else {
      copy8(dst, A, m0 + r, M, k0 + kc, K);
    }
  }
#pragma unroll
  for (int c = 0; c < BK * BN / 8 / THREADS; c++) {
    const int chunk = tid + c * THREADS;
    const int r = chunk / (BN / 8), nc = (chunk % (BN / 8)) * 8;
    u16* dst = bs + r * BS + nc;
    if (fast) {
      const bool in = k0 + r < K && n0 + nc < N;
      cp_async16(smem_addr(dst), in ? B + (long long)(k0 + r) * N + n0 + nc : B, in ? 16 : 0);
    } else {
      copy8(dst, B, k0 + r, K, n0 + nc, N);
    }
  }
}

/* The BM x BN tile of C = A @ B (A M x K, B K x N, C M x N) at (m0, n0). */
__device__ __forceinline__ void gemm_tile(const u16* __restrict__ A, const u16* __restrict__ B,
                                          __nv_bfloat16* __restrict__ C, int M, int N, int K,
                                          int m0, int n0, u16* As, u16* Bs) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
  const bool fast = K % 8 == 0 && N % 8 == 0 &&
                    (((unsigned long long)A | (unsigned long long)B) & 15) == 0;

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; i++)
#pragma unroll
    for (int j = 0; j < NI; j++)
#pragma unroll
      for (int e = 0; e < 4; e++)
        acc[i][j][e] = 0.0f;

  const int ktiles = (K + BK - 1) / BK;
#pragma unroll
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < ktiles) load_stage(As + s * A_STAGE, Bs + s * B_STAGE, A, B, M, N, K, m0, n0, s * BK,
                               fast);
    cp_async_commit();
  }

  for (int kt = 0; kt < ktiles; kt++) {
    cp_async_wait<STAGES - 2>(); /* this thread's copies of step kt have landed */
    __syncthreads();             /* everyone's have; and step kt - 1's buffer is free */
    const int next = kt + STAGES - 1;
    if (next < ktiles) {
      const int s = next % STAGES;
      load_stage(As + s * A_STAGE, Bs + s * B_STAGE, A, B, M, N, K, m0, n0, next * BK, fast);
    }
    cp_async_commit();

    const u16* as = As + (kt % STAGES) * A_STAGE;
    const u16* bs = Bs + (kt % STAGES) * B_STAGE;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned af[MI][4], bf[NI][2];
#pragma unroll
      for (int i = 0; i < MI; i++)
        ldmatrix_x4(af[i], smem_addr(as + (wm + i * 16 + (lane & 15)) * AS + kk + (lane >> 4) * 8));
#pragma unroll
      for (int j = 0; j < NI; j += 2) {
        unsigned t[4];
        ldmatrix_x4_trans(t, smem_addr(bs + (kk + (lane & 15)) * BS + wn + j * 8 + (lane >> 4) * 8));
        bf[j][0] = t[0];
        bf[j][1] = t[1];
        bf[j + 1][0] = t[2];
        bf[j + 1][1] = t[3];
      }
#pragma unroll
      for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
          mma_bf16(acc[i][j], af[i], bf[j][0], bf[j][1]);
    }
  }
  cp_async_wait<0>();

  /* accumulator (i, j): rows g and g + 8, columns 2t and 2t + 1 of its 16 x 8 tile */
  const int g = lane >> 2, t2 = (lane & 3) * 2;
  const bool pairs = N % 2 == 0 && ((unsigned long long)C & 3) == 0;
#pragma unroll
  for (int i = 0; i < MI; i++)
#pragma unroll
    for (int j = 0; j < NI; j++)
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const int row = m0 + wm + i * 16 + g + h * 8, col = n0 + wn + j * 8 + t2;
        if (row >= M) continue;
        __nv_bfloat16* p = C + (long long)row * N + col;
        const float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
        if (pairs && col + 1 < N) {
          *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(v0, v1);
        } else {
          if (col < N) p[0] = __float2bfloat16(v0);
          if (col + 1 < N) p[1] = __float2bfloat16(v1);
        }
      }
}

extern "C" __global__ void __launch_bounds__(THREADS)
    grouped_gemm_bf16(const __nv_bfloat16* __restrict__ Ab, const __nv_bfloat16* __restrict__ Bb,
                      const int* __restrict__ counts, __nv_bfloat16* __restrict__ C, int T, int E,
                      int N, int K) {
  extern __shared__ __align__(16) unsigned char smem[];
  u16* As = reinterpret_cast<u16*>(smem);
  u16* Bs = As + STAGES * A_STAGE;

  /* grouped rasterisation over the virtual tile rows (room for every expert's tiles) */
  const int tiles_m = (T + BM - 1) / BM + E, tiles_n = (N + BN - 1) / BN;
  const int per_group = GROUP_M * tiles_n;
  const int pid = blockIdx.x;
  const int first_m = (pid / per_group) * GROUP_M;
  const int group_m = min(tiles_m - first_m, GROUP_M);
  const int tr = first_m + (pid % per_group) % group_m; /* tile row */
  const int n0 = ((pid % per_group) / group_m) * BN;

  /* which expert owns tile row tr */
  int start = 0, before = 0, e = 0, rows = 0;
  for (; e < E; e++) {
    const int end = e == E - 1 ? T : min(start + max(counts[e], 0), T);
    rows = end - start;
    const int tiles = (rows + BM - 1) / BM;
    if (tr < before + tiles) break;
    before += tiles;
    start = end;
  }
  if (e == E) return; /* past the last tile */
  const long long off = start;
  gemm_tile(reinterpret_cast<const u16*>(Ab) + off * K,
            reinterpret_cast<const u16*>(Bb) + (long long)e * K * N, C + off * N, rows, N, K,
            (tr - before) * BM, n0, As, Bs);
}
