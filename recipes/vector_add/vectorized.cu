/* vector_add seed: a grid-stride loop over 16-byte chunks (float4), UNROLL independent chunks
 * in flight per thread, streaming loads and stores (data used once should not crowd L2), a
 * scalar tail for n % 4 and a scalar path when a pointer is not 16-byte aligned.
 * Knobs: BLOCK (threads per block), UNROLL (float4 chunks per thread per iteration). */
/* kevo:launch
local chunks = cdiv(N, 4)
return {
  kernels = {
    {name = "vector_add", grid = {min(cdiv(chunks, BLOCK * UNROLL), 65536)}, block = {BLOCK},
     args = {"a", "b", "c", i32(N)}},
  },
}
*/

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef UNROLL
#define UNROLL 4
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
    vector_add(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
               int n) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long threads = (long long)gridDim.x * blockDim.x;
  const unsigned long long addr_bits =
      (unsigned long long)a | (unsigned long long)b | (unsigned long long)c;
  if (addr_bits & 15) { /* not 16-byte aligned: plain scalar grid-stride loop */
    for (long long i = tid; i < n; i += threads)
      c[i] = a[i] + b[i];
    return;
  }
  const long long chunks = n / 4;
  const float4* a4 = reinterpret_cast<const float4*>(a);
  const float4* b4 = reinterpret_cast<const float4*>(b);
  float4* c4 = reinterpret_cast<float4*>(c);
  /* thread t handles chunks base, base + threads, ..., base + (UNROLL-1)*threads: every load
   * of one unrolled step is coalesced across the warp and independent of the others */
  for (long long base = tid; base < chunks; base += threads * UNROLL) {
    float4 va[UNROLL], vb[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      const long long i = base + u * threads;
      if (i < chunks) {
        va[u] = __ldcs(a4 + i);
        vb[u] = __ldcs(b4 + i);
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      const long long i = base + u * threads;
      if (i < chunks)
        __stcs(c4 + i, make_float4(va[u].x + vb[u].x, va[u].y + vb[u].y, va[u].z + vb[u].z,
                                   va[u].w + vb[u].w));
    }
  }
  for (long long i = chunks * 4 + tid; i < n; i += threads) /* the last n % 4 elements */
    c[i] = a[i] + b[i];
}
