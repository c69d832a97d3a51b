/* fp8_quant_block reference: one thread per 128-element group: its amax, then
 * scale = max(amax / 448, 1 / (448 * 512)) and q = e4m3(x / scale), saturated to +-448.
 * Plain on purpose: it is the yardstick. */
/* kevo:launch
return {
  kernels = {
    {name = "fp8_quant_block", grid = {cdiv(M * (N // 128), 128)}, block = {128}, shared = 0,
     args = {"x", "q", "scale", i32(M), i32(N)}},
  },
}
*/
#include <cuda_bf16.h>
#include <cuda_fp8.h>

extern "C" __global__ void fp8_quant_block(const __nv_bfloat16* x, __nv_fp8_e4m3* q, float* scale,
                                           int M, int N) {
  const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= (long long)M * (N / 128)) return;
  const long long base = g * 128; /* N % 128 == 0: group g is elements 128g .. 128g + 127 */
  float m = 0.0f;
  for (int j = 0; j < 128; j++) m = fmaxf(m, fabsf(__bfloat162float(x[base + j])));
  const float s = fmaxf(m / 448.0f, 1.0f / (448.0f * 512.0f));
  scale[g] = s;
  for (int j = 0; j < 128; j++) q[base + j] = __nv_fp8_e4m3(__bfloat162float(x[base + j]) / s);
}
