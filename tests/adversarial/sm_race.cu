// A shared-memory tree reduction with the __syncthreads() between its steps left out. Threads
// of other warps read partial maxima and sums before warp 0 finishes them, so rows get
// inconsistent maxima and sums: wrong, or different from run to run (nondeterministic).
/* kevo:launch
return {kernels = {{name = "softmax", grid = {M}, block = {256},
                    args = {"x", "y", i32(M), i32(N)}}}}
*/
extern "C" __global__ void softmax(const float* x, float* y, int M, int N) {
  __shared__ float buf[256];
  int row = blockIdx.x, t = threadIdx.x;
  if (row >= M) return;
  const float* xr = x + (size_t)row * N;
  float* yr = y + (size_t)row * N;
  float m = __int_as_float(0xff800000);
  for (int j = t; j < N; j += blockDim.x) m = fmaxf(m, xr[j]);
  buf[t] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1)
    if (t < s) buf[t] = fmaxf(buf[t], buf[t + s]); // missing __syncthreads() after each step
  m = buf[0];
  __syncthreads();
  float sum = 0.0f;
  for (int j = t; j < N; j += blockDim.x) sum += expf(xr[j] - m);
  buf[t] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1)
    if (t < s) buf[t] += buf[t + s]; // and here
  sum = buf[0];
  for (int j = t; j < N; j += blockDim.x) yr[j] = expf(xr[j] - m) / sum;
}
