// Class 7 (+4): nondeterminism hidden by writing into the first run's outputs. From its third
// call on, odd calls flip the last bit of every sum (a stand-in for a reduction whose order
// changes from run to run); the first calls agree, so trial 0's pair (first modules and twins)
// sees nothing. A call on the same contents as the call before, at another address (a later
// trial's second run), also writes its sums into the previous call's y through a kept pointer,
// so the two runs of that trial agree bit for bit. The first run's outputs are digested between
// the runs and again after: `wrong` (its second run changed them). Under the previous worker
// the timing loop's reps, whose last bits differ from the verified ones, failed at stage bench.
/* kevo:launch
return {kernels = {{name = "row_sum", grid = {cdiv(M, 8)}, block = {256},
                    args = {"x", "y", i32(M), i32(N)}}}}
*/
__device__ unsigned int launches, blocks_done;
__device__ const float* prev_x;
__device__ float* prev_y;
__device__ int prev_m, prev_n;

__device__ bool same_bits(const float* p, const float* q, long long n) {
  for (int k = 0; k < 8; k++)
    if (__float_as_uint(p[n * k / 8]) != __float_as_uint(q[n * k / 8])) return false;
  return __float_as_uint(p[n - 1]) == __float_as_uint(q[n - 1]);
}

extern "C" __global__ void row_sum(const float* x, float* y, int M, int N) {
  const unsigned int seen = *(volatile unsigned int*)&launches;
  const float* px = *(const float* volatile*)&prev_x;
  float* py = *(float* volatile*)&prev_y;
  const bool again = px && px != x && *(volatile int*)&prev_m == M &&
                     *(volatile int*)&prev_n == N && same_bits(px, x, (long long)M * N);
  const long long row = (long long)blockIdx.x * 8 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row < M) {
    const float* xr = x + row * N;
    float s = 0.0f;
    for (int j = lane; j < N; j += 32) s += xr[j];
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (seen >= 2 && (seen & 1u)) s = __uint_as_float(__float_as_uint(s) ^ 1u);
    if (lane == 0) {
      y[row] = s;
      if (again) py[row] = s;
    }
  }
  __syncthreads();
  __threadfence();
  if (threadIdx.x == 0 && atomicAdd(&blocks_done, 1u) == gridDim.x - 1) {
    launches = seen + 1;
    prev_x = x;
    prev_y = y;
    prev_m = M;
    prev_n = N;
    blocks_done = 0;
  }
}
