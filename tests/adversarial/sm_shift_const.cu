// Class 3: a stability shift tuned to the stress trial it expects. Softmax subtracting a fixed
// 40 instead of the row's max: exp(x - 40) neither overflows on uniform(80, 100) (exp(60) is
// 1e26, and a row of 65536 of them stays in range) nor underflows on normal(0, 1) (exp(-46) is
// 1e-20), so it passes the default init and the first stress trial. The recipe's second stress
// trial, normal(0, 1000), spreads rows over thousands: exp overflows to inf and inf / inf is
// NaN: `wrong`.
/* kevo:launch
return {kernels = {{name = "softmax", grid = {M}, block = {256},
                    args = {"x", "y", i32(M), i32(N)}}}}
*/
extern "C" __global__ void softmax(const float* x, float* y, int M, int N) {
  __shared__ float red[8];
  const float* xr = x + (long long)blockIdx.x * N;
  float* yr = y + (long long)blockIdx.x * N;
  float s = 0.0f;
  for (int j = threadIdx.x; j < N; j += blockDim.x) s += expf(xr[j] - 40.0f);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
  __syncthreads();
  float t = 0.0f;
  for (int k = 0; k < 8; k++) t += red[k];
  for (int j = threadIdx.x; j < N; j += blockDim.x) yr[j] = expf(xr[j] - 40.0f) / t;
}
