/* layernorm reference: one block per row, in double: the mean, then the sum of squared
 * deviations (two passes, shared-memory tree reductions), then the write, rounded once.
 * Plain on purpose: it is the yardstick candidates are checked and timed against. */
/* kevo:launch
return {
  kernels = {
    {name = "layernorm", grid = {M}, block = {256}, shared = 0,
     args = {"x", "weight", "bias", "y", i32(M), i32(N)}},
  },
}
*/

#define REF_THREADS 256
#define EPS 1e-5

/* Sum of v over the block, through partial[] (all threads get it). */
__device__ double block_sum(double v, double* partial) {
  const int tid = threadIdx.x;
  partial[tid] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) partial[tid] += partial[tid + s];
    __syncthreads();
  }
  const double total = partial[0];
  __syncthreads();
  return total;
}

extern "C" __global__ void layernorm(const float* x, const float* weight, const float* bias,
                                     float* y, int M, int N) {
  __shared__ double partial[REF_THREADS];
  const int row = blockIdx.x;
  const int tid = threadIdx.x;
  if (row >= M) return;
  const float* xr = x + (long long)row * N;
  float* yr = y + (long long)row * N;

  double s = 0.0;
  for (int j = tid; j < N; j += blockDim.x)
    s += xr[j];
  const double mean = block_sum(s, partial) / N;

  double q = 0.0;
  for (int j = tid; j < N; j += blockDim.x) {
    const double d = xr[j] - mean;
    q += d * d;
  }
  const double var = block_sum(q, partial) / N;
  const double rstd = 1.0 / sqrt(var + EPS);

  for (int j = tid; j < N; j += blockDim.x)
    yr[j] = (float)((xr[j] - mean) * rstd * weight[j] + bias[j]);
}
