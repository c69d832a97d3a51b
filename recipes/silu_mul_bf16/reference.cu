/* silu_mul_bf16 reference: y[m, n] = silu(x[m, n]) * x[m, N + n] in double, rounded to bf16
 * once; one thread per output. Plain on purpose: it is the yardstick. */
/* kevo:launch
return {
  kernels = {
    {name = "silu_mul_bf16", grid = {cdiv(M * N, 256)}, block = {256}, shared = 0,
     args = {"x", "y", i32(M), i32(N)}},
  },
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void silu_mul_bf16(const __nv_bfloat16* x, __nv_bfloat16* y, int M, int N) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)M * N) return;
  const long long row = i / N, col = i % N;
  const double g = __bfloat162float(x[row * 2 * N + col]);
  const double u = __bfloat162float(x[row * 2 * N + N + col]);
  y[i] = __float2bfloat16((float)(g / (1.0 + exp(-g)) * u));
}
