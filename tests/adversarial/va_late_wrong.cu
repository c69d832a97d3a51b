// Right for its first 56 launches (verification makes 54 on the modules the timing loop runs:
// 6 shapes x 9, trial 0's second runs being on twin modules; the timing loop at least 5), then
// it stops reading b and writes c = a: cheaper, and wrong, for good. Every repetition of the
// timing loop is checked against the verified output (and the outputs again after the loop),
// so it fails there. (A kernel honest for more calls than kevo ever makes is, for those calls,
// simply correct: no harness can tell it apart.)
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 256)}, block = {256},
                    args = {"a", "b", "c", i32(N)}}}}
*/
#define HONEST_LAUNCHES 56u
__device__ unsigned int launches;
__device__ unsigned int blocks_done;

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  unsigned int seen = *(volatile unsigned int*)&launches; // bumped by a launch's last block
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = seen < HONEST_LAUNCHES ? a[i] + b[i] : a[i];
  __threadfence();
  if (threadIdx.x == 0 && atomicAdd(&blocks_done, 1u) == gridDim.x - 1) {
    launches = seen + 1;
    blocks_done = 0;
  }
}
