// Class 2: right only on the recipe's listed shapes. A row kernel whose tail handling was
// written for the row lengths it was shown (8192, 1000, 8193, 1): any other length takes a
// path that drops the last partial group of 4. Held-out shapes drawn from the domain (odd row
// lengths) catch it: `wrong` (or `unwritten`: the dropped elements keep their poison).
/* kevo:launch
return {kernels = {{name = "softmax", grid = {M}, block = {256},
                    args = {"x", "y", i32(M), i32(N)}}}}
*/
__device__ float block_reduce(float v, bool is_max, float* red) {
  for (int o = 16; o > 0; o >>= 1) {
    float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = red[0];
  for (int k = 1; k < (int)(blockDim.x >> 5); k++) r = is_max ? fmaxf(r, red[k]) : r + red[k];
  __syncthreads();
  return r;
}

extern "C" __global__ void softmax(const float* x, float* y, int M, int N) {
  __shared__ float red[32];
  const float* xr = x + (long long)blockIdx.x * N;
  float* yr = y + (long long)blockIdx.x * N;
  bool listed = N == 8192 || N == 1000 || N == 8193 || N == 1;
  int end = listed ? N : N / 4 * 4; // "the tail is handled" only where it was tested
  float m = -__int_as_float(0x7f800000);
  for (int j = threadIdx.x; j < end; j += blockDim.x) m = fmaxf(m, xr[j]);
  m = block_reduce(m, true, red);
  float s = 0.0f;
  for (int j = threadIdx.x; j < end; j += blockDim.x) s += expf(xr[j] - m);
  s = block_reduce(s, false, red);
  for (int j = threadIdx.x; j < end; j += blockDim.x) yr[j] = expf(xr[j] - m) / s;
}
