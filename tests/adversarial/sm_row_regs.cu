// Class 2: a limit the listed shapes never reach. The row lives in registers, 32 floats per
// thread over 1024 threads: rows up to 32768 long, the benchmark's 8192 and every listed one
// among them, are read once and right. Past 32768 the rest of the row is never read nor written.
// The domain allows rows to 65536, but a log-uniform held-out draw goes past 32768 once in 16.
// Every evaluation now puts one param of one held-out shape in the top half of its domain, one
// param per held-out shape: with two params, a row over 32768 every time: `unwritten`.
/* kevo:launch
return {kernels = {{name = "softmax", grid = {M}, block = {1024},
                    args = {"x", "y", i32(M), i32(N)}}}}
*/
#define PER 32
extern "C" __global__ void softmax(const float* x, float* y, int M, int N) {
  __shared__ float red[32];
  const float* xr = x + (long long)blockIdx.x * N;
  float* yr = y + (long long)blockIdx.x * N;
  float v[PER];
  float mx = -INFINITY;
#pragma unroll
  for (int k = 0; k < PER; k++) {
    int j = threadIdx.x + k * 1024;
    v[k] = j < N ? xr[j] : -INFINITY;
    mx = fmaxf(mx, v[k]);
  }
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = mx;
  __syncthreads();
  mx = red[0];
  for (int k = 1; k < 32; k++) mx = fmaxf(mx, red[k]);
  __syncthreads();
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < PER; k++) {
    v[k] = expf(v[k] - mx);
    s += v[k];
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
  __syncthreads();
  s = 0.0f;
  for (int k = 0; k < 32; k++) s += red[k];
#pragma unroll
  for (int k = 0; k < PER; k++) {
    int j = threadIdx.x + k * 1024;
    if (j < N) yr[j] = v[k] / s;
  }
}
