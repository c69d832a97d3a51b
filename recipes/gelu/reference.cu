/* gelu reference: one thread per element, computed in double through erfc (no cancellation
 * for very negative x) and rounded once: the exact GELU to within f32 rounding. */
/* kevo:launch
return {
  kernels = {
    {name = "gelu", grid = {cdiv(N, 256)}, block = {256},
     args = {"x", "y", i32(N)}},
  },
}
*/

extern "C" __global__ void gelu(const float* x, float* y, int n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const double v = x[i];
    /* 0.5 * (1 + erf(v / sqrt(2))) == 0.5 * erfc(-v / sqrt(2)) */
    y[i] = (float)(v * 0.5 * erfc(-v * 0.70710678118654752440));
  }
}
