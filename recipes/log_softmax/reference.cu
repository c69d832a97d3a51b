/* log_softmax reference: one block per row, three passes (max, sum of exponentials in double,
 * write), each reduced through a shared-memory tree. Plain on purpose: it is the yardstick
 * candidates are checked and timed against. */
/* kevo:launch
return {
  kernels = {
    {name = "log_softmax", grid = {M}, block = {256}, shared = 0,
     args = {"x", "y", i32(M), i32(N)}},
  },
}
*/

#define REF_THREADS 256

extern "C" __global__ void log_softmax(const float* x, float* y, int M, int N) {
  __shared__ float pmax[REF_THREADS];
  __shared__ double psum[REF_THREADS];
  const int row = blockIdx.x;
  const int tid = threadIdx.x;
  if (row >= M) return;
  const float* xr = x + (long long)row * N;
  float* yr = y + (long long)row * N;

  float m = -__int_as_float(0x7f800000); /* -inf */
  for (int j = tid; j < N; j += blockDim.x)
    m = fmaxf(m, xr[j]);
  pmax[tid] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) pmax[tid] = fmaxf(pmax[tid], pmax[tid + s]);
    __syncthreads();
  }
  m = pmax[0];

  double sum = 0.0;
  for (int j = tid; j < N; j += blockDim.x)
    sum += exp((double)xr[j] - (double)m);
  psum[tid] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) psum[tid] += psum[tid + s];
    __syncthreads();
  }
  const double lse = (double)m + log(psum[0]);

  for (int j = tid; j < N; j += blockDim.x)
    yr[j] = (float)((double)xr[j] - lse);
}
