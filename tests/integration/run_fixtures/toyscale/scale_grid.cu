/* kevo:launch
return {kernels = {{name = "scale_grid", grid = {device and device.sms * 4 or 528},
                    block = {BLOCK}, args = {"x", "y", i32(N)}}}}
*/
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 1
#endif
extern "C" __global__ void scale_grid(const float *x, float *y, int n) {
  for (int i = (blockIdx.x * BLOCK + threadIdx.x) * VEC; i < n; i += gridDim.x * BLOCK * VEC)
#pragma unroll
    for (int v = 0; v < VEC; v++)
      if (i + v < n) y[i + v] = 2.0f * x[i + v];
}
