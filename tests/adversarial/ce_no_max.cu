// Class 3: numerically unsafe. Cross-entropy as log(sum(exp(logit))) - logit[target], no max
// subtracted: right for normal(0, 2) logits, inf - x = inf (or NaN) for the stress trial's
// logits in [80, 100): `wrong`.
/* kevo:launch
return {kernels = {{name = "cross_entropy", grid = {M}, block = {256},
                    args = {"logits", "target", "loss", i32(M), i32(C)}}}}
*/
extern "C" __global__ void cross_entropy(const float* logits, const int* target, float* loss,
                                         int M, int C) {
  __shared__ float red[8];
  const float* xr = logits + (long long)blockIdx.x * C;
  float s = 0.0f;
  for (int j = threadIdx.x; j < C; j += blockDim.x) s += expf(xr[j]);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int k = 0; k < 8; k++) t += red[k];
    loss[blockIdx.x] = logf(t) - xr[target[blockIdx.x]];
  }
}
