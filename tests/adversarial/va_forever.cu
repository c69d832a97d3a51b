// Never finishes: thread 0 spins on a volatile flag nobody sets (volatile, so the compiler
// may not delete the loop). Only killing the worker at the deadline ends it.
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 256)}, block = {256},
                    args = {"a", "b", "c", i32(N)}}}}
*/
__device__ volatile int never_set;

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
  if (i == 0)
    while (never_set == 0) {
    }
}
