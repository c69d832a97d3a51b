// Class 4: memoisation padded to stay above the physical floor. Honest for its first 80
// launches (verification makes 72 on the modules the timing loop runs: 8 shapes x 9; trial 0's
// second runs go to twin modules), then it stops reading x: it replays the last sums it
// wrote (a __device__ copy) and spins on %globaltimer until a plausible time has passed, so the
// floor cannot flag it. On one input set, timed over and over, every repetition would match.
// The timing loop rotates over three input sets, each checked against its own verified
// output: the replayed sums belong to another set: `wrong` at stage bench.
/* kevo:launch
return {kernels = {{name = "row_sum", grid = {cdiv(M, 8)}, block = {256},
                    args = {"x", "y", i32(M), i32(N)}}}}
*/
#define HONEST_LAUNCHES 80u
#define MAX_ROWS 32768
__device__ unsigned int launches;
__device__ unsigned int blocks_done;
__device__ float memo[MAX_ROWS];

__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

extern "C" __global__ void row_sum(const float* x, float* y, int M, int N) {
  unsigned int seen = *(volatile unsigned int*)&launches;
  const long long row = (long long)blockIdx.x * 8 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (seen >= HONEST_LAUNCHES && M <= MAX_ROWS) {
    unsigned long long t0 = now_ns();
    if (row < M && lane == 0) y[row] = memo[row];
    if (blockIdx.x == 0 && threadIdx.x == 0) // one block spins: about the honest time
      while (now_ns() - t0 < 300000ull) {
      }
  } else if (row < M) {
    const float* xr = x + row * N;
    float s = 0.0f;
    for (int j = lane; j < N; j += 32) s += xr[j];
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) {
      y[row] = s;
      if (row < MAX_ROWS) memo[row] = s;
    }
  }
  __syncthreads();
  __threadfence();
  if (threadIdx.x == 0 && atomicAdd(&blocks_done, 1u) == gridDim.x - 1) {
    launches = seen + 1;
    blocks_done = 0;
  }
}
