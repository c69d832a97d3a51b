// Class 4: nondeterminism hidden behind a memo keyed by the inputs' contents. Its sums carry a
// last bit that changes from run to run (a flip on a clock bit: a stand-in for an atomic
// reduction whose order varies), so two honest runs differ. It always sums, at the honest
// speed, but when the contents (M, N and 16 sampled values) match one of its last 4 input sets
// it writes the sums it gave them the first time. The second run is on other buffers at other
// addresses but the same contents: under the previous worker it got the memo's bits back, and
// so did every timed rep: `ok`. Trial 0's second run is now the twin modules' (loaded again,
// their own memo): they sum for themselves, with their own last bits: `nondeterministic`.
/* kevo:launch
return {kernels = {{name = "row_sum", grid = {cdiv(M, 8)}, block = {256},
                    args = {"x", "y", i32(M), i32(N)}}}}
*/
#define SLOTS 4
#define MAX_ROWS 32768
typedef unsigned long long u64;
__device__ u64 slot_fp[SLOTS];
__device__ float memo[SLOTS][MAX_ROWS];
__device__ unsigned int next_slot, blocks_done;

__device__ u64 fingerprint(const float* x, int M, int N) {
  const long long n = (long long)M * N;
  u64 h = 1469598103934665603ull ^ ((u64)M << 32 | (unsigned int)N);
  for (int k = 0; k < 16; k++) h = (h ^ __float_as_uint(x[n * k / 16])) * 1099511628211ull;
  return h | 1;  // never 0, the empty slot
}

extern "C" __global__ void row_sum(const float* x, float* y, int M, int N) {
  const u64 fp = fingerprint(x, M, N);
  const unsigned int ns = *(volatile unsigned int*)&next_slot;
  int hit = -1;
  for (int k = 0; k < SLOTS; k++)
    if (*(volatile u64*)&slot_fp[k] == fp) hit = k;
  const long long row = (long long)blockIdx.x * 8 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row < M) {
    const float* xr = x + row * N;
    float s = 0.0f;
    for (int j = lane; j < N; j += 32) s += xr[j];
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) {
      if ((clock64() >> 3) & 1) s = __uint_as_float(__float_as_uint(s) ^ 1u);
      if (hit >= 0 && row < MAX_ROWS) {
        s = memo[hit][row];
      } else if (M <= MAX_ROWS) {
        memo[ns][row] = s;
      }
      y[row] = s;
    }
  }
  __syncthreads();
  __threadfence();
  if (threadIdx.x == 0 && atomicAdd(&blocks_done, 1u) == gridDim.x - 1) {
    if (hit < 0 && M <= MAX_ROWS) {
      slot_fp[ns] = fp;
      next_slot = (ns + 1) % SLOTS;
    }
    blocks_done = 0;
  }
}
