/* softmax reference: one block per row, three passes (max, sum of exponentials, write), each
 * reduced through shared memory. Plain on purpose: it is the yardstick candidates are checked
 * and timed against, so it favours being obviously right over being fast. */
/* kevo:launch
return {
  kernels = {
    {name = "softmax", grid = {M}, block = {256}, shared = 0,
     args = {"x", "y", i32(M), i32(N)}},
  },
}
*/

#define REF_THREADS 256

extern "C" __global__ void softmax(const float* x, float* y, int M, int N) {
  __shared__ float partial[REF_THREADS];
  const int row = blockIdx.x;
  const int tid = threadIdx.x;
  if (row >= M) return;
  const float* xr = x + (long long)row * N;
  float* yr = y + (long long)row * N;

  float m = -__int_as_float(0x7f800000); /* -inf */
  for (int j = tid; j < N; j += blockDim.x)
    m = fmaxf(m, xr[j]);
  partial[tid] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) partial[tid] = fmaxf(partial[tid], partial[tid + s]);
    __syncthreads();
  }
  m = partial[0];
  __syncthreads();

  float sum = 0.0f;
  for (int j = tid; j < N; j += blockDim.x)
    sum += expf(xr[j] - m);
  partial[tid] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) partial[tid] += partial[tid + s];
    __syncthreads();
  }
  sum = partial[0];

  for (int j = tid; j < N; j += blockDim.x)
    yr[j] = expf(xr[j] - m) / sum;
}
