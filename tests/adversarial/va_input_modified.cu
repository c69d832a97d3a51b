// Right answer, but it uses input a as scratch: it stores (a + b) - b back into a, which
// differs from a in the last bit for many elements. The output stays within tolerance on
// every run (even the second, poisoned one), so only the input checksum catches it.
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 256)}, block = {256},
                    args = {"a", "b", "c", i32(N)}}}}
*/
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float s = a[i] + b[i];
    c[i] = s;
    const_cast<float*>(a)[i] = s - b[i];
  }
}
