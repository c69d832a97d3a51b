/* kevo:launch
return {kernels = {{name = "scale", grid = {cdiv(N, BLOCK)}, block = {BLOCK},
                    args = {"x", "y", i32(N)}}}}
*/
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef SLOW
#define SLOW 0
#endif
extern "C" __global__ void scale(const float *x, float *y, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
#if SLOW > 0
/* 2^SLOW distinct inlined instantiations: NVRTC takes 2-20 s for SLOW = 11, 40-80 s for 12 */
template <int D, int O> struct Slow {
  static __device__ __forceinline__ float f(float a, const float *y) {
    return Slow<D - 1, 2 * O>::f(a, y) * 1.0001f + Slow<D - 1, 2 * O + 1>::f(a, y);
  }
};
template <int O> struct Slow<0, O> {
  static __device__ __forceinline__ float f(float a, const float *y) { return a + y[O % 97]; }
};
extern "C" __global__ void slow(float *y) { y[1] = Slow<SLOW, BLOCK>::f(y[0], y); }
#endif
