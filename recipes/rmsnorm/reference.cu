/* rmsnorm reference: one block per row; the sum of squares in double through a shared-memory
 * tree, then the write, rounded once. Plain on purpose: it is the yardstick candidates are
 * checked and timed against. */
/* kevo:launch
return {
  kernels = {
    {name = "rmsnorm", grid = {M}, block = {256}, shared = 0,
     args = {"x", "weight", "y", i32(M), i32(N)}},
  },
}
*/

#define REF_THREADS 256
#define EPS 1e-6

extern "C" __global__ void rmsnorm(const float* x, const float* weight, float* y, int M, int N) {
  __shared__ double partial[REF_THREADS];
  const int row = blockIdx.x;
  const int tid = threadIdx.x;
  if (row >= M) return;
  const float* xr = x + (long long)row * N;
  float* yr = y + (long long)row * N;

  double q = 0.0;
  for (int j = tid; j < N; j += blockDim.x)
    q += (double)xr[j] * xr[j];
  partial[tid] = q;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) partial[tid] += partial[tid + s];
    __syncthreads();
  }
  const double rstd = 1.0 / sqrt(partial[0] / N + EPS);

  for (int j = tid; j < N; j += blockDim.x)
    yr[j] = (float)(xr[j] * rstd * weight[j]);
}
