/* gelu seed: a grid-stride loop over 16-byte chunks (float4), UNROLL independent chunks in
 * flight per thread, streaming loads and stores, a scalar tail for n % 4 and a scalar path when
 * a pointer is not 16-byte aligned. GELU as x * normcdff(x), which equals
 * 0.5 * x * (1 + erf(x / sqrt(2))) but goes through erfc: accurate for very negative x too.
 * Knobs: BLOCK (threads per block), UNROLL (float4 chunks per thread per iteration). */
/* kevo:launch
local chunks = cdiv(N, 4)
return {
  kernels = {
    {name = "gelu", grid = {max(1, min(cdiv(chunks, BLOCK * UNROLL), 65536))}, block = {BLOCK},
     args = {"x", "y", i32(N)}},
  },
}
*/

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef UNROLL
#define UNROLL 4
#endif

__device__ __forceinline__ float gelu1(float v) {
  return v * normcdff(v);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    gelu(const float* __restrict__ x, float* __restrict__ y, int n) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long threads = (long long)gridDim.x * blockDim.x;
  if (((unsigned long long)x | (unsigned long long)y) & 15) { /* not 16-byte aligned */
    for (long long i = tid; i < n; i += threads)
      y[i] = gelu1(x[i]);
    return;
  }
  const long long chunks = n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  for (long long base = tid; base < chunks; base += threads * UNROLL) {
    float4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      const long long i = base + u * threads;
      if (i < chunks) v[u] = __ldcs(x4 + i);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      const long long i = base + u * threads;
      if (i < chunks)
        __stcs(y4 + i, make_float4(gelu1(v[u].x), gelu1(v[u].y), gelu1(v[u].z), gelu1(v[u].w)));
    }
  }
  for (long long i = chunks * 4 + tid; i < n; i += threads) /* the last n % 4 elements */
    y[i] = gelu1(x[i]);
}
