/* add_rmsnorm_bf16 reference: h = bf16(x + residual) (written to residual_out), then
 * y = h / sqrt(mean(h^2) + 1e-6) * weight with the sum of squares in double, one block per row,
 * a shared-memory tree. Plain on purpose: it is the yardstick. */
/* kevo:launch
return {
  kernels = {
    {name = "add_rmsnorm_bf16", grid = {M}, block = {256}, shared = 0,
     args = {"x", "residual", "weight", "y", "residual_out", i32(M), i32(N)}},
  },
}
*/
#include <cuda_bf16.h>

#define REF_THREADS 256

extern "C" __global__ void add_rmsnorm_bf16(const __nv_bfloat16* x, const __nv_bfloat16* residual,
                                            const __nv_bfloat16* weight, __nv_bfloat16* y,
                                            __nv_bfloat16* residual_out, int M, int N) {
  __shared__ double part[REF_THREADS];
  const int row = blockIdx.x, tid = threadIdx.x;
  if (row >= M) return;
  const long long base = (long long)row * N;
  double ss = 0.0;
  for (int j = tid; j < N; j += blockDim.x) {
    const __nv_bfloat16 h =
        __float2bfloat16(__bfloat162float(x[base + j]) + __bfloat162float(residual[base + j]));
    residual_out[base + j] = h;
    const double q = __bfloat162float(h);
    ss += q * q;
  }
  part[tid] = ss;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) part[tid] += part[tid + s];
    __syncthreads();
  }
  const double rstd = 1.0 / sqrt(part[0] / N + 1e-6);
  for (int j = tid; j < N; j += blockDim.x)
    y[base + j] = __float2bfloat16((float)(__bfloat162float(residual_out[base + j]) * rstd *
                                           __bfloat162float(weight[j])));
}
