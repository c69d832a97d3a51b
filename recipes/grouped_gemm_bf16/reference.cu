/* grouped_gemm_bf16 reference: expert e owns rows [o_e, o_{e+1}) of A and C, with o_0 = 0,
 * o_{e+1} = min(o_e + counts[e], T), and the last expert everything left (o_E = T);
 * C[rows of e] = A[rows of e] @ B[e]. The textbook 16 x 16 shared-memory tiled kernel over a grid
 * with room for every expert's tile rows (cdiv(T, 16) + E), products and sums in f32, one
 * rounding to bf16. No tensor cores: plain and obviously right. */
/* kevo:launch
return {
  kernels = {
    {name = "grouped_gemm_bf16", grid = {cdiv(N, 16), cdiv(T, 16) + E}, block = {16, 16},
     shared = 0, args = {"A", "B", "counts", "C", i32(T), i32(E), i32(N), i32(K)}},
  },
}
*/
#include <cuda_bf16.h>

#define TS 16

extern "C" __global__ void grouped_gemm_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B,
                                             const int* counts, __nv_bfloat16* C, int T, int E,
                                             int N, int K) {
  __shared__ float as[TS][TS], bs[TS][TS + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  int start = 0, before = 0, e = 0, rows = 0;
  for (; e < E; e++) {
    const int end = e == E - 1 ? T : min(start + max(counts[e], 0), T);
    rows = end - start;
    const int tiles = (rows + TS - 1) / TS;
    if ((int)blockIdx.y < before + tiles) break;
    before += tiles;
    start = end;
  }
  if (e == E) return;
  const int r = ((int)blockIdx.y - before) * TS + ty; /* row within the expert */
  const int col = blockIdx.x * TS + tx;
  const __nv_bfloat16* Ae = A + (long long)start * K;
  const __nv_bfloat16* Be = B + (long long)e * K * N;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TS) {
    const int ka = k0 + tx, kb = k0 + ty;
    as[ty][tx] = (r < rows && ka < K) ? __bfloat162float(Ae[(long long)r * K + ka]) : 0.0f;
    bs[ty][tx] = (kb < K && col < N) ? __bfloat162float(Be[(long long)kb * N + col]) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TS; k++) acc = fmaf(as[ty][k], bs[k][tx], acc);
    __syncthreads();
  }
  if (r < rows && col < N) C[((long long)start + r) * N + col] = __float2bfloat16(acc);
}
