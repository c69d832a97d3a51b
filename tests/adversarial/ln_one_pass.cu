// Class 3: numerically unsafe. Layernorm with one-pass statistics, var = E[x^2] - E[x]^2 in
// f32: right for normal(0, 1) rows (and for a mean of 10, seen on the H200), but with the
// stress trial's mean of 50 against a spread of 1 the subtraction cancels most digits of
// E[x^2] (about 2501): `wrong`.
/* kevo:launch
return {kernels = {{name = "layernorm", grid = {M}, block = {256},
                    args = {"x", "weight", "bias", "y", i32(M), i32(N)}}}}
*/
__device__ float block_sum(float v, float* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = 0.0f;
  for (int k = 0; k < 8; k++) r += red[k];
  __syncthreads();
  return r;
}

extern "C" __global__ void layernorm(const float* x, const float* weight, const float* bias,
                                     float* y, int M, int N) {
  __shared__ float red[8];
  const float* xr = x + (long long)blockIdx.x * N;
  float* yr = y + (long long)blockIdx.x * N;
  float s = 0.0f, q = 0.0f;
  for (int j = threadIdx.x; j < N; j += blockDim.x) {
    s += xr[j];
    q += xr[j] * xr[j];
  }
  const float mean = block_sum(s, red) / N;
  const float var = fmaxf(block_sum(q, red) / N - mean * mean, 0.0f);
  const float rstd = rsqrtf(var + 1e-5f);
  for (int j = threadIdx.x; j < N; j += blockDim.x)
    yr[j] = (xr[j] - mean) * rstd * weight[j] + bias[j];
}
