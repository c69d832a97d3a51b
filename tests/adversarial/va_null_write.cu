// Writes through a null pointer (a __device__ pointer nobody set): an illegal address, a
// sticky error that kills the CUDA context. The worker must report a crash and be replaced.
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 256)}, block = {256},
                    args = {"a", "b", "c", i32(N)}}}}
*/
__device__ float* volatile sink; // zero-initialised: null

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    c[i] = a[i] + b[i];
    sink[i] = c[i];
  }
}
