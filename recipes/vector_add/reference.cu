/* vector_add reference: one thread per element, nothing clever. */
/* kevo:launch
return {
  kernels = {
    {name = "vector_add", grid = {cdiv(N, 256)}, block = {256},
     args = {"a", "b", "c", i32(N)}},
  },
}
*/

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
