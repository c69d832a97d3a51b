/* row_sum reference: one block per row, a double accumulator per thread and a shared-memory
 * tree, rounded once. Plain on purpose: it is the yardstick candidates are checked and timed
 * against. */
/* kevo:launch
return {
  kernels = {
    {name = "row_sum", grid = {M}, block = {256}, shared = 0,
     args = {"x", "y", i32(M), i32(N)}},
  },
}
*/

#define REF_THREADS 256

extern "C" __global__ void row_sum(const float* x, float* y, int M, int N) {
  __shared__ double partial[REF_THREADS];
  const int row = blockIdx.x;
  const int tid = threadIdx.x;
  if (row >= M) return;
  const float* xr = x + (long long)row * N;
  double s = 0.0;
  for (int j = tid; j < N; j += blockDim.x)
    s += xr[j];
  partial[tid] = s;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (tid < k) partial[tid] += partial[tid + k];
    __syncthreads();
  }
  if (tid == 0) y[row] = (float)partial[0];
}
