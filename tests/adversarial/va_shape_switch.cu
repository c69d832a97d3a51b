// Class 2: right only on the recipe's listed shapes. A vector_add "specialised" for the sizes
// it was tested at (2^28, 1, 1000, 1048579): any other size takes a path whose grid-stride loop
// stops a block short. Held-out shapes drawn from the domain catch it: `unwritten` or `wrong`.
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 256)}, block = {256},
                    args = {"a", "b", "c", i32(N)}}}}
*/
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  bool listed = n == 268435456 || n == 1 || n == 1000 || n == 1048579;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int end = listed ? n : (n - 256 > 0 ? n - 256 : n / 2);
  if (i < end) c[i] = a[i] + b[i];
}
