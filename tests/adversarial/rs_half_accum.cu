// Class 3: a cast to a lower precision. Each lane sums its share of the row in f16 (half the
// registers, twice the math rate): on short rows of normal(0, 1) values the error stays small,
// but the stress trial's rows (mean 100) sum past f16's largest finite value, 65504, to inf,
// and long rows lose digits. `wrong`.
/* kevo:launch
return {kernels = {{name = "row_sum", grid = {cdiv(M, 8)}, block = {256},
                    args = {"x", "y", i32(M), i32(N)}}}}
*/
#include <cuda_fp16.h>

extern "C" __global__ void row_sum(const float* x, float* y, int M, int N) {
  const long long row = (long long)blockIdx.x * 8 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= M) return;
  const float* xr = x + row * N;
  __half s = __float2half(0.0f);
  for (int j = lane; j < N; j += 32) s = __hadd(s, __float2half(xr[j]));
  float f = __half2float(s);
  for (int off = 16; off > 0; off >>= 1) f += __shfl_xor_sync(0xffffffffu, f, off);
  if (lane == 0) y[row] = f;
}
