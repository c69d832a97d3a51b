/* fp8_quant_block seed: per-block FP8 e4m3 quantisation of bf16 activations, blocks of 128
 * consecutive elements of a row (DeepSeek-V3's 1 x 128 activation groups):
 * scale[m, g] = max(amax(|x[m, 128g .. 128g + 127]|) / 448, 1 / (448 * 512)),
 * q = e4m3(x / scale) saturated.
 *  - N % 128 == 0, so the groups tile the flat array: 16 consecutive lanes (a half-warp) hold one
 *    group, 8 elements each (one 16-byte load), and reduce its amax with four __shfl_xor_sync; the
 *    first lane writes the scale. No shared memory, no block-wide step.
 *  - Each thread takes UNROLL vectors BLOCK apart, all loads issued before any math; q is written
 *    8 bytes (8 e4m3) at a time.
 * Knobs: BLOCK (threads, a multiple of 32), UNROLL (vectors per thread). */
/* kevo:launch
return {
  kernels = {
    {name = "fp8_quant_block", grid = {cdiv(M * N // 8, BLOCK * UNROLL)}, block = {BLOCK},
     shared = 0, args = {"x", "q", "scale", i32(M), i32(N)}},
  },
}
*/
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#if BLOCK % 32 != 0
#error "BLOCK must be a multiple of 32"
#endif
#define FP8_MAX 448.0f
#define MIN_SCALE (1.0f / (448.0f * 512.0f))

__device__ __forceinline__ float bf_at(const uint4& v, int e) {
  const unsigned w = e < 2 ? v.x : e < 4 ? v.y : e < 6 ? v.z : v.w;
  return __uint_as_float((e & 1) ? (w & 0xffff0000u) : (w << 16));
}
__device__ __forceinline__ uint2 to_fp8(const uint4& v, float inv) {
  unsigned short p[4];
#pragma unroll
  for (int i = 0; i < 4; i++)
    p[i] = __nv_cvt_float2_to_fp8x2(make_float2(bf_at(v, 2 * i) * inv, bf_at(v, 2 * i + 1) * inv),
                                    __NV_SATFINITE, __NV_E4M3);
  return make_uint2(p[0] | ((unsigned)p[1] << 16), p[2] | ((unsigned)p[3] << 16));
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    fp8_quant_block(const __nv_bfloat16* __restrict__ x, __nv_fp8_e4m3* __restrict__ q,
                    float* __restrict__ scale, int M, int N) {
  const long long total = (long long)M * N / 8; /* 16-byte vectors; 16 per group */
  const long long first = (long long)blockIdx.x * BLOCK * UNROLL + threadIdx.x;
  const uint4* xv = reinterpret_cast<const uint4*>(x);
  uint2* qv = reinterpret_cast<uint2*>(q);
  uint4 v[UNROLL];
#pragma unroll
  for (int u = 0; u < UNROLL; u++) {
    const long long i = first + (long long)u * BLOCK;
    v[u] = i < total ? xv[i] : make_uint4(0, 0, 0, 0);
  }
#pragma unroll
  for (int u = 0; u < UNROLL; u++) {
    const long long i = first + (long long)u * BLOCK;
    float m = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; e++) m = fmaxf(m, fabsf(bf_at(v[u], e)));
#pragma unroll
    for (int o = 8; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    const float s = fmaxf(m / FP8_MAX, MIN_SCALE);
    if (i < total) {
      if ((threadIdx.x & 15) == 0) scale[i / 16] = s;
      qv[i] = to_fp8(v[u], 1.0f / s);
    }
  }
}
