// Asks for 300 KiB of dynamic shared memory per block; an H100/H200 block can have at most
// 227 KiB (even after opting in). The launch itself must fail: launch_error.
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 256)}, block = {256},
                    shared = 300 * 1024, args = {"a", "b", "c", i32(N)}}}}
*/
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  extern __shared__ float tile[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? a[i] + b[i] : 0.0f;
  __syncthreads();
  if (i < n) c[i] = tile[threadIdx.x];
}
