// Launches 2048 threads per block; the limit is 1024. The launch must fail: launch_error.
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 2048)}, block = {2048},
                    args = {"a", "b", "c", i32(N)}}}}
*/
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
