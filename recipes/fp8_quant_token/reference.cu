/* fp8_quant_token reference: one block per row; amax through a shared-memory tree, then
 * scale = max(amax / 448, 1 / (448 * 512)) and q = e4m3(x / scale), saturated to +-448.
 * Plain on purpose: it is the yardstick. */
/* kevo:launch
return {
  kernels = {
    {name = "fp8_quant_token", grid = {M}, block = {256}, shared = 0,
     args = {"x", "q", "scale", i32(M), i32(N)}},
  },
}
*/
#include <cuda_bf16.h>
#include <cuda_fp8.h>

extern "C" __global__ void fp8_quant_token(const __nv_bfloat16* x, __nv_fp8_e4m3* q,
                                           float* scale, int M, int N) {
  __shared__ float part[256];
  const int row = blockIdx.x, tid = threadIdx.x;
  if (row >= M) return;
  const long long base = (long long)row * N;
  float m = 0.0f;
  for (int j = tid; j < N; j += blockDim.x) m = fmaxf(m, fabsf(__bfloat162float(x[base + j])));
  part[tid] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) part[tid] = fmaxf(part[tid], part[tid + s]);
    __syncthreads();
  }
  const float s = fmaxf(part[0] / 448.0f, 1.0f / (448.0f * 512.0f));
  if (tid == 0) scale[row] = s;
  for (int j = tid; j < N; j += blockDim.x)
    q[base + j] = __nv_fp8_e4m3(__bfloat162float(x[base + j]) / s);
}
