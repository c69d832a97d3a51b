// Does not compile: a misspelt name. The diagnostic must point at the marked line and the
// column of "bb" (tests/lua/test_cuda.lua checks it with real NVRTC).
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 256)}, block = {256},
                    args = {"a", "b", "c", i32(N)}}}}
*/
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + bb[i]; // kevo:expect-error
}
