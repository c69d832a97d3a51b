// Right for verification (its first 54 launches on the modules the timing loop runs: 6 shapes
// x 9), wrong for a window of launches (56 to 69) that
// falls in the warm-up and first timed repetitions, then right again for every later call,
// including the check after the timing loop. Only checking the output of every timed or
// warm-up repetition catches it: each must match the verified output bit for bit.
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 256)}, block = {256},
                    args = {"a", "b", "c", i32(N)}}}}
*/
#define WRONG_FROM 56u
#define WRONG_UNTIL 70u
__device__ unsigned int launches;
__device__ unsigned int blocks_done;

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  unsigned int seen = *(volatile unsigned int*)&launches; // bumped by a launch's last block
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  bool wrong = seen >= WRONG_FROM && seen < WRONG_UNTIL;
  if (i < n) c[i] = wrong ? a[i] : a[i] + b[i];
  __threadfence();
  if (threadIdx.x == 0 && atomicAdd(&blocks_done, 1u) == gridDim.x - 1) {
    launches = seen + 1;
    blocks_done = 0;
  }
}
