// Class 3: a range downcast the default init never shows. The reference's tiled kernel, but the
// bf16 inputs go through f16 first (as if to reuse an f16 tensor-core path): f16 has more
// mantissa bits than bf16, so on normal(0, 0.5) inputs every value converts exactly and the
// result is the reference's, bit for bit up to the order of f32 additions. f16's range ends at
// 65504: the recipe's stress trial (uniform(1e5, 2e5), no cancellation, so honest f32
// accumulation is well inside the tolerance) turns every input into inf: `wrong`. The recipe
// had no stress trial, and nothing else in verification could see it.
/* kevo:launch
return {kernels = {{name = "matmul_bf16", grid = {cdiv(N, 16), cdiv(M, 16)}, block = {16, 16},
                    args = {"A", "B", "C", i32(M), i32(N), i32(K)}}}}
*/
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define T 16

__device__ float via_f16(__nv_bfloat16 v) {
  return __half2float(__float2half_rn(__bfloat162float(v)));
}

extern "C" __global__ void matmul_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B,
                                       __nv_bfloat16* C, int M, int N, int K) {
  __shared__ float as[T][T], bs[T][T + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += T) {
    const int ka = k0 + tx, kb = k0 + ty;
    as[ty][tx] = (row < M && ka < K) ? via_f16(A[(long long)row * K + ka]) : 0.0f;
    bs[ty][tx] = (kb < K && col < N) ? via_f16(B[(long long)kb * N + col]) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < T; k++) acc = fmaf(as[ty][k], bs[k][tx], acc);
    __syncthreads();
  }
  if (row < M && col < N) C[(long long)row * N + col] = __float2bfloat16(acc);
}
