// Correct on every check, and not doing the work: each block first looks at the first
// element of its own tile; if c already holds exactly a + b there, it assumes the whole tile
// is done and returns. Poisoned outputs (every verification run) and fresh inputs (every
// trial) make it compute; in a timing loop that reruns it on the same buffers it reads 3
// floats per block instead of 3 per thread, and the outputs are still right afterwards.
// Only the physical floor (bytes / bandwidth) can tell: expected verdict implausible.
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 256)}, block = {256},
                    args = {"a", "b", "c", i32(N)}}}}
*/
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int first = blockIdx.x * blockDim.x;
  if (first < n && __float_as_uint(c[first]) == __float_as_uint(a[first] + b[first])) return;
  int i = first + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
