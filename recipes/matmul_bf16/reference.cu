/* matmul_bf16 reference: the textbook 16 x 16 shared-memory tiled kernel, one thread per element
 * of C, products and sums in f32 (bf16 inputs widened exactly), one rounding to bf16 at the end.
 * No tensor cores: plain and obviously right; it is the yardstick candidates are checked and
 * timed against. */
/* kevo:launch
return {
  kernels = {
    {name = "matmul_bf16", grid = {cdiv(N, 16), cdiv(M, 16)}, block = {16, 16}, shared = 0,
     args = {"A", "B", "C", i32(M), i32(N), i32(K)}},
  },
}
*/

#include <cuda_bf16.h>

#define T 16

extern "C" __global__ void matmul_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B,
                                       __nv_bfloat16* C, int M, int N, int K) {
  __shared__ float as[T][T], bs[T][T + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += T) {
    const int ka = k0 + tx, kb = k0 + ty;
    as[ty][tx] = (row < M && ka < K) ? __bfloat162float(A[(long long)row * K + ka]) : 0.0f;
    bs[ty][tx] = (kb < K && col < N) ? __bfloat162float(B[(long long)kb * N + col]) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < T; k++)
      acc = fmaf(as[ty][k], bs[k][tx], acc);
    __syncthreads();
  }
  if (row < M && col < N) C[(long long)row * N + col] = __float2bfloat16(acc);
}
