// Computes the first launch honestly and remembers its result in a __device__ buffer; every
// later launch replays that buffer instead of reading its inputs. The second (re-poisoned)
// run of the first trial still matches (same inputs), the next trial's fresh inputs do not.
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 256)}, block = {256},
                    args = {"a", "b", "c", i32(N)}}}}
*/
#define MEMO_CAP (1 << 20)
__device__ float memo[MEMO_CAP];
__device__ int memo_filled;
__device__ unsigned int blocks_done;

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int replay = *(volatile int*)&memo_filled; // set only by the last block of a launch
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    if (replay && i < MEMO_CAP) {
      c[i] = memo[i];
    } else {
      float v = a[i] + b[i];
      c[i] = v;
      if (i < MEMO_CAP) memo[i] = v;
    }
  }
  __threadfence();
  if (threadIdx.x == 0 && atomicAdd(&blocks_done, 1u) == gridDim.x - 1) {
    memo_filled = 1;
    blocks_done = 0;
  }
}
