// Honest control: keeps state between launches and is honest. A __device__ launch counter,
// and a scratch buffer (not zeroed by the worker) the first kernel writes a + b into and the
// second copies out. Nothing it keeps changes its answer: `ok`.
/* kevo:launch
return {
  kernels = {
    {name = "vector_add", grid = {cdiv(N, 256)}, block = {256}, args = {"a", "b", "tmp", i32(N)}},
    {name = "copy_out", grid = {cdiv(N, 256)}, block = {256}, args = {"tmp", "c", i32(N)}},
  },
  scratch = {tmp = {bytes = 4 * N, zero = false}},
}
*/
__device__ unsigned long long launches;

extern "C" __global__ void vector_add(const float* a, const float* b, float* tmp, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) atomicAdd(&launches, 1ull);
  if (i < n) tmp[i] = a[i] + b[i];
}

extern "C" __global__ void copy_out(const float* tmp, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = tmp[i];
}
