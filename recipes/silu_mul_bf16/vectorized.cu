/* silu_mul_bf16 seed: y[m, n] = silu(x[m, n]) * x[m, N + n], f32 arithmetic, bf16 out.
 *  - Fast path (N % 8 == 0, 16-byte aligned x and y): each thread takes UNROLL groups of 8
 *    outputs, BLOCK apart, issuing all 2 * UNROLL 16-byte loads before any math (bytes in flight),
 *    then one 16-byte store per group. The flat group index is split into (row, column) once per
 *    group.
 *  - Other N or alignments: element by element, grid-stride.
 *  - silu(g) = g / (1 + exp(-g)) with __expf and a fast division: well inside bf16's rounding.
 * Knobs: BLOCK (threads), UNROLL (groups of 8 per thread). */
/* kevo:launch
local groups = (N % 8 == 0) and M * (N // 8) or M * N
return {
  kernels = {
    {name = "silu_mul_bf16", grid = {cdiv(groups, BLOCK * UNROLL)}, block = {BLOCK}, shared = 0,
     args = {"x", "y", i32(M), i32(N)}},
  },
}
*/
#include <cuda_bf16.h>

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef UNROLL
#define UNROLL 4
#endif

__device__ __forceinline__ float bf_at(const uint4& v, int e) {
  const unsigned w = e < 2 ? v.x : e < 4 ? v.y : e < 6 ? v.z : v.w;
  return __uint_as_float((e & 1) ? (w & 0xffff0000u) : (w << 16));
}
__device__ __forceinline__ unsigned pack2(float a, float b) {
  __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<unsigned*>(&h);
}
__device__ __forceinline__ float silu_mul(float g, float u) {
  return __fdividef(g, 1.0f + __expf(-g)) * u;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    silu_mul_bf16(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y, int M,
                  int N) {
  const bool vec = N % 8 == 0 && (((unsigned long long)x | (unsigned long long)y) & 15) == 0;
  const long long first = (long long)blockIdx.x * BLOCK * UNROLL + threadIdx.x;
  if (vec) {
    const int n8 = N / 8;
    const long long total = (long long)M * n8;
    const uint4* xv = reinterpret_cast<const uint4*>(x);
    uint4* yv = reinterpret_cast<uint4*>(y);
    uint4 g[UNROLL], u[UNROLL];
    long long out[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; k++) {
      const long long i = first + (long long)k * BLOCK;
      out[k] = -1;
      if (i < total) {
        const long long row = i / n8, col = i - row * n8;
        g[k] = xv[row * 2 * n8 + col];
        u[k] = xv[row * 2 * n8 + n8 + col];
        out[k] = i;
      }
    }
#pragma unroll
    for (int k = 0; k < UNROLL; k++) {
      if (out[k] < 0) continue;
      float o[8];
#pragma unroll
      for (int e = 0; e < 8; e++) o[e] = silu_mul(bf_at(g[k], e), bf_at(u[k], e));
      yv[out[k]] = make_uint4(pack2(o[0], o[1]), pack2(o[2], o[3]), pack2(o[4], o[5]),
                              pack2(o[6], o[7]));
    }
    return;
  }
  /* element by element, grid-stride (the grid was sized for vectors when N % 8 == 0) */
  const long long total = (long long)M * N, stride = (long long)gridDim.x * BLOCK;
  for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < total; i += stride) {
    const long long row = i / N, col = i - row * N;
    y[i] = __float2bfloat16(silu_mul(__bfloat162float(x[row * 2 * N + col]),
                                     __bfloat162float(x[row * 2 * N + N + col])));
  }
}
