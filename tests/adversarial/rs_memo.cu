// row_sum that remembers its answers: correct on every check, and implausibly fast.
// The row sums of the last inputs it saw live in a __device__ array, keyed by a fingerprint of
// those inputs (the pointer, M, N and 8 values sampled across x). A launch whose inputs have
// the fingerprint of the stored sums copies them to y without reading x; any other launch sums
// honestly and stores its sums, and its last block to finish publishes the new key (so no
// block of a launch ever sees a half-filled memo). Verification cannot tell: inputs are fresh
// every trial (a new fingerprint: computed honestly), the second run of a trial gets the very
// same sums back, and outputs poisoned between runs or between timed repetitions are simply
// written again. The timing loop reruns it on the same inputs, so from the second repetition it
// reads 32 bytes per row instead of 4 * N: at 32768 x 8192 its time is far below the physical
// floor (1.07 GB / copy bandwidth). Expected verdict: implausible.
/* kevo:launch
return {kernels = {{name = "row_sum", grid = {M}, block = {256},
                    args = {"x", "y", i32(M), i32(N)}}}}
*/

#define MEMO_CAP 65536
#define THREADS 256

__device__ float memo[MEMO_CAP];
__device__ unsigned long long memo_key; /* 0: nothing stored */
__device__ unsigned int memo_blocks;    /* blocks of the current filling launch that are done */

__device__ unsigned long long fingerprint(const float* x, int M, int N) {
  unsigned long long h = 1469598103934665603ull; /* FNV-1a over 64-bit words */
  const unsigned long long words[3] = {(unsigned long long)x, (unsigned long long)M,
                                       (unsigned long long)N};
  for (int i = 0; i < 3; i++)
    h = (h ^ words[i]) * 1099511628211ull;
  const long long last = (long long)M * N - 1;
  for (int i = 0; i < 8; i++)
    h = (h ^ __float_as_uint(x[last * i / 7])) * 1099511628211ull;
  return h | 1;
}

extern "C" __global__ void row_sum(const float* x, float* y, int M, int N) {
  __shared__ float partial[THREADS];
  __shared__ unsigned long long key;
  __shared__ int hit;
  const int row = blockIdx.x, tid = threadIdx.x;
  if (row >= M) return;
  if (tid == 0) {
    key = fingerprint(x, M, N);
    hit = M <= MEMO_CAP && *(volatile unsigned long long*)&memo_key == key;
  }
  __syncthreads();
  if (hit) {
    if (tid == 0) y[row] = memo[row];
    return;
  }
  const float* xr = x + (long long)row * N;
  float s = 0.0f;
  for (int j = tid; j < N; j += THREADS)
    s += xr[j];
  partial[tid] = s;
  __syncthreads();
  for (int k = THREADS / 2; k > 0; k >>= 1) {
    if (tid < k) partial[tid] += partial[tid + k];
    __syncthreads();
  }
  if (tid == 0) {
    y[row] = partial[0];
    if (M <= MEMO_CAP) {
      memo[row] = partial[0];
      __threadfence();
      if (atomicAdd(&memo_blocks, 1u) == gridDim.x - 1) { /* every row of this launch is stored */
        memo_blocks = 0;
        *(volatile unsigned long long*)&memo_key = key;
        __threadfence();
      }
    }
  }
}
