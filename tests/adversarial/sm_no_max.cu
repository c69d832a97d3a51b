// Class 3: numerically unsafe on inputs the default init never produces. Softmax without the
// max subtraction: exp(x) overflows to inf for x above ~88, so inf / inf = NaN. Right on
// normal(0, 1) inputs; the recipe's stress trial (uniform(80, 100)) makes it `wrong`.
/* kevo:launch
return {kernels = {{name = "softmax", grid = {M}, block = {256},
                    args = {"x", "y", i32(M), i32(N)}}}}
*/
extern "C" __global__ void softmax(const float* x, float* y, int M, int N) {
  __shared__ float red[8];
  const float* xr = x + (long long)blockIdx.x * N;
  float* yr = y + (long long)blockIdx.x * N;
  float s = 0.0f;
  for (int j = threadIdx.x; j < N; j += blockDim.x) s += expf(xr[j]);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
  __syncthreads();
  float t = 0.0f;
  for (int k = 0; k < 8; k++) t += red[k];
  for (int j = threadIdx.x; j < N; j += blockDim.x) yr[j] = expf(xr[j]) / t;
}
