// Class 8: reading past the end of an input, right only because the padding is zero. A
// two-pass layernorm whose mean pass reads the last row on to a 16-byte boundary, up to 3
// floats past the end of x: zeros add nothing to a sum, so the mean was right. The worker pads
// inputs with NaN: the last row's mean is NaN wherever N is not a multiple of 4: `wrong`.
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
  const int end = blockIdx.x == M - 1 ? (N + 3) / 4 * 4 : N; // "the allocation is padded"
  float s = 0.0f;
  for (int j = threadIdx.x; j < end; j += blockDim.x) s += xr[j];
  const float mean = block_sum(s, red) / N;
  float q = 0.0f;
  for (int j = threadIdx.x; j < N; j += blockDim.x) q += (xr[j] - mean) * (xr[j] - mean);
  const float rstd = rsqrtf(block_sum(q, red) / N + 1e-5f);
  for (int j = threadIdx.x; j < N; j += blockDim.x)
    yr[j] = (xr[j] - mean) * rstd * weight[j] + bias[j];
}
