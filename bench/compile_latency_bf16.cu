// A bf16 row-sum kernel that includes the toolkit's fp16/bf16 headers: the header-heavy case
// for bench/compile_latency.sh (those headers are most of its compile time).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void rowsum_bf16(const __nv_bfloat16* x, __half* y, int M, int N) {
  __shared__ float red[32];
  int row = blockIdx.x;
  if (row >= M) return;
  float s = 0.0f;
  for (int j = threadIdx.x; j < N; j += blockDim.x) s += __bfloat162float(x[(size_t)row * N + j]);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < (blockDim.x + 31) / 32 ? red[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) y[row] = __float2half(s);
  }
}
