/* softmax_bf16 reference: one block per row, three passes (max, sum of exponentials in double,
 * write), each reduced through a shared-memory tree. Plain on purpose: it is the yardstick. */
/* kevo:launch
return {
  kernels = {
    {name = "softmax_bf16", grid = {M}, block = {256}, shared = 0,
     args = {"x", "y", i32(M), i32(N)}},
  },
}
*/
#include <cuda_bf16.h>

#define REF_THREADS 256

extern "C" __global__ void softmax_bf16(const __nv_bfloat16* x, __nv_bfloat16* y, int M, int N) {
  __shared__ float pm[REF_THREADS];
  __shared__ double ps[REF_THREADS];
  const int row = blockIdx.x, tid = threadIdx.x;
  if (row >= M) return;
  const __nv_bfloat16* xr = x + (long long)row * N;
  __nv_bfloat16* yr = y + (long long)row * N;
  float m = -__int_as_float(0x7f800000);
  for (int j = tid; j < N; j += blockDim.x) m = fmaxf(m, __bfloat162float(xr[j]));
  pm[tid] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) pm[tid] = fmaxf(pm[tid], pm[tid + s]);
    __syncthreads();
  }
  m = pm[0];
  double sum = 0.0;
  for (int j = tid; j < N; j += blockDim.x) sum += exp((double)__bfloat162float(xr[j]) - m);
  ps[tid] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) ps[tid] += ps[tid + s];
    __syncthreads();
  }
  sum = ps[0];
  for (int j = tid; j < N; j += blockDim.x)
    yr[j] = __float2bfloat16((float)(exp((double)__bfloat162float(xr[j]) - m) / sum));
}
