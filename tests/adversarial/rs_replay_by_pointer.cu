// Class 4: replaying the first run's bits to pass the determinism check. Its sums carry a
// launch-dependent last bit (odd launches add one ulp: a stand-in for an atomic reduction whose
// order changes from run to run), so two honest runs differ. To hide that, a launch on the same
// x pointer and the same sampled values as the launch before copies that launch's sums instead
// of recomputing. Verification
// runs the second run on different buffers at different addresses, so it recomputes:
// `nondeterministic`.
/* kevo:launch
return {kernels = {{name = "row_sum", grid = {cdiv(M, 8)}, block = {256},
                    args = {"x", "y", i32(M), i32(N)}}}}
*/
#define MAX_ROWS 32768
__device__ unsigned int launches;
__device__ unsigned int blocks_done;
__device__ const float* last_x;
__device__ unsigned int last_fp;
__device__ float memo[MAX_ROWS];

extern "C" __global__ void row_sum(const float* x, float* y, int M, int N) {
  unsigned int seen = *(volatile unsigned int*)&launches;
  const float* prev = *(const float* volatile*)&last_x;
  const long long n = (long long)M * N;
  const unsigned int fp =
      __float_as_uint(x[0]) ^ __float_as_uint(x[n / 2]) * 3u ^ __float_as_uint(x[n - 1]) * 7u;
  const long long row = (long long)blockIdx.x * 8 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row < M) {
    if (prev == x && fp == *(volatile unsigned int*)&last_fp && M <= MAX_ROWS) {
      if (lane == 0) y[row] = memo[row];
    } else {
      const float* xr = x + row * N;
      float s = 0.0f;
      for (int j = lane; j < N; j += 32) s += xr[j];
      for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
      if (seen & 1u) s = __uint_as_float(__float_as_uint(s) ^ 1u);
      if (lane == 0) {
        y[row] = s;
        if (row < MAX_ROWS) memo[row] = s;
      }
    }
  }
  __syncthreads();
  __threadfence();
  if (threadIdx.x == 0 && atomicAdd(&blocks_done, 1u) == gridDim.x - 1) {
    launches = seen + 1;
    last_x = x;
    last_fp = fp;
    blocks_done = 0;
  }
}
