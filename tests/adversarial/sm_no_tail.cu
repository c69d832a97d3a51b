// Loads and stores float4 and forgets the tail: it handles the first 4 * (N / 4) elements of
// each row. Right at 16384 x 8192 and 127 x 1000; at 1 x 8193 the last element keeps its poison
// (and the sum misses it), at 3 x 1 nothing is written at all: unwritten (or wrong).
/* kevo:launch
return {kernels = {{name = "softmax", grid = {M}, block = {256},
                    args = {"x", "y", i32(M), i32(N)}}}}
*/
__device__ float block_reduce(float v, float* red, bool is_max) {
  int t = threadIdx.x;
  red[t] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) red[t] = is_max ? fmaxf(red[t], red[t + s]) : red[t] + red[t + s];
    __syncthreads();
  }
  float r = red[0];
  __syncthreads();
  return r;
}

extern "C" __global__ void softmax(const float* x, float* y, int M, int N) {
  __shared__ float red[256];
  int row = blockIdx.x;
  if (row >= M) return;
  const float4* xr = reinterpret_cast<const float4*>(x + (size_t)row * N);
  float4* yr = reinterpret_cast<float4*>(y + (size_t)row * N);
  int n4 = N / 4;
  float m = __int_as_float(0xff800000);
  for (int j = threadIdx.x; j < n4; j += blockDim.x) {
    float4 v = xr[j];
    m = fmaxf(fmaxf(m, fmaxf(v.x, v.y)), fmaxf(v.z, v.w));
  }
  m = block_reduce(m, red, true);
  float s = 0.0f;
  for (int j = threadIdx.x; j < n4; j += blockDim.x) {
    float4 v = xr[j];
    s += expf(v.x - m) + expf(v.y - m) + expf(v.z - m) + expf(v.w - m);
  }
  s = block_reduce(s, red, false);
  float inv = 1.0f / s;
  for (int j = threadIdx.x; j < n4; j += blockDim.x) {
    float4 v = xr[j];
    yr[j] = make_float4(expf(v.x - m) * inv, expf(v.y - m) * inv, expf(v.z - m) * inv,
                        expf(v.w - m) * inv);
  }
}
