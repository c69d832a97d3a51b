// A correct softmax (one block per row, warp-shuffle reductions, expf): the control for the
// softmax contract.
/* kevo:launch
return {kernels = {{name = "softmax", grid = {M}, block = {256},
                    args = {"x", "y", i32(M), i32(N)}}}}
*/
__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
// Reduces v over the block (max or sum); every thread gets the result.
__device__ float block_reduce(float v, float* red, bool is_max) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
  v = is_max ? warp_max(v) : warp_sum(v);
  if (lane == 0) red[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < nwarps ? red[lane] : (is_max ? __int_as_float(0xff800000) : 0.0f);
    w = is_max ? warp_max(w) : warp_sum(w);
    if (lane == 0) red[32] = w;
  }
  __syncthreads();
  float r = red[32];
  __syncthreads(); // red is reused by the next reduction
  return r;
}

extern "C" __global__ void softmax(const float* x, float* y, int M, int N) {
  __shared__ float red[33];
  int row = blockIdx.x;
  if (row >= M) return;
  const float* xr = x + (size_t)row * N;
  float* yr = y + (size_t)row * N;
  float m = __int_as_float(0xff800000);
  for (int j = threadIdx.x; j < N; j += blockDim.x) m = fmaxf(m, xr[j]);
  m = block_reduce(m, red, true);
  float s = 0.0f;
  for (int j = threadIdx.x; j < N; j += blockDim.x) s += expf(xr[j] - m);
  s = block_reduce(s, red, false);
  float inv = 1.0f / s;
  for (int j = threadIdx.x; j < N; j += blockDim.x) yr[j] = expf(xr[j] - m) * inv;
}
