/* fp8_quant_token seed: per-token (per-row) dynamic FP8 e4m3 quantisation of bf16 activations.
 * scale[m] = max(amax(|x[m, :]|) / 448, 1 / (448 * 512)), q = e4m3(x / scale) saturated.
 *  - One block per row. Fast path (N % 8 == 0, aligned): 16-byte loads of 8 bf16, all of a
 *    thread's loads issued first and the row kept in registers (raw bf16) between the amax and
 *    the conversion: x is read once; q is written 8 bytes (8 e4m3) at a time.
 *  - Longer rows or other N: the conversion pass reads x again (mostly from L2).
 *  - amax: __shfl_xor_sync within a warp, one shared slot per warp across warps.
 * Knobs: BLOCK (threads, a multiple of 32), CACHE (16-byte vectors per thread kept in registers). */
/* kevo:launch
return {
  kernels = {
    {name = "fp8_quant_token", grid = {M}, block = {BLOCK}, shared = 0,
     args = {"x", "q", "scale", i32(M), i32(N)}},
  },
}
*/
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef CACHE
#define CACHE 4
#endif
#if BLOCK % 32 != 0 || BLOCK < 32 || BLOCK > 1024
#error "BLOCK must be a multiple of 32 between 32 and 1024"
#endif
#define WARPS (BLOCK / 32)
#define FP8_MAX 448.0f
#define MIN_SCALE (1.0f / (448.0f * 512.0f))

__device__ __forceinline__ float bf_at(const uint4& v, int e) {
  const unsigned w = e < 2 ? v.x : e < 4 ? v.y : e < 6 ? v.z : v.w;
  return __uint_as_float((e & 1) ? (w & 0xffff0000u) : (w << 16));
}
/* 8 bf16 (as f32, times inv) -> 8 e4m3 bytes, saturated to +-448 */
__device__ __forceinline__ uint2 to_fp8(const uint4& v, float inv) {
  unsigned short p[4];
#pragma unroll
  for (int i = 0; i < 4; i++)
    p[i] = __nv_cvt_float2_to_fp8x2(make_float2(bf_at(v, 2 * i) * inv, bf_at(v, 2 * i + 1) * inv),
                                    __NV_SATFINITE, __NV_E4M3);
  return make_uint2(p[0] | ((unsigned)p[1] << 16), p[2] | ((unsigned)p[3] << 16));
}
__device__ __forceinline__ float vmax8(const uint4& v, float m) {
#pragma unroll
  for (int e = 0; e < 8; e++) m = fmaxf(m, fabsf(bf_at(v, e)));
  return m;
}
__device__ __forceinline__ float block_max(float v, float* slots) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if ((threadIdx.x & 31) == 0) slots[threadIdx.x >> 5] = v;
  __syncthreads();
  v = 0.0f;
#pragma unroll
  for (int w = 0; w < WARPS; w++) v = fmaxf(v, slots[w]);
  return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    fp8_quant_token(const __nv_bfloat16* __restrict__ x, __nv_fp8_e4m3* __restrict__ q,
                    float* __restrict__ scale, int M, int N) {
  __shared__ float slots[WARPS];
  const int row = blockIdx.x, tid = threadIdx.x;
  if (row >= M) return;
  const long long base = (long long)row * N;
  const bool vec = N % 8 == 0 && (((unsigned long long)x | (unsigned long long)q) & 15) == 0;
  const int nvec = N / 8;
  float m = 0.0f;
  if (vec) {
    const uint4* xv = reinterpret_cast<const uint4*>(x + base);
    uint2* qv = reinterpret_cast<uint2*>(q + base);
    if (nvec <= CACHE * BLOCK) { /* one read: the row stays in registers */
      uint4 c[CACHE];
#pragma unroll
      for (int k = 0; k < CACHE; k++)
        if (tid + k * BLOCK < nvec) c[k] = xv[tid + k * BLOCK];
#pragma unroll
      for (int k = 0; k < CACHE; k++)
        if (tid + k * BLOCK < nvec) m = vmax8(c[k], m);
      const float s = fmaxf(block_max(m, slots) / FP8_MAX, MIN_SCALE), inv = 1.0f / s;
      if (tid == 0) scale[row] = s;
#pragma unroll
      for (int k = 0; k < CACHE; k++)
        if (tid + k * BLOCK < nvec) qv[tid + k * BLOCK] = to_fp8(c[k], inv);
      return;
    }
    for (int i = tid; i < nvec; i += BLOCK) m = vmax8(xv[i], m);
    const float s = fmaxf(block_max(m, slots) / FP8_MAX, MIN_SCALE), inv = 1.0f / s;
    if (tid == 0) scale[row] = s;
    for (int i = tid; i < nvec; i += BLOCK) qv[i] = to_fp8(xv[i], inv);
    return;
  }
  for (int j = tid; j < N; j += BLOCK) m = fmaxf(m, fabsf(__bfloat162float(x[base + j])));
  const float s = fmaxf(block_max(m, slots) / FP8_MAX, MIN_SCALE), inv = 1.0f / s;
  if (tid == 0) scale[row] = s;
  for (int j = tid; j < N; j += BLOCK)
    q[base + j] = __nv_fp8_e4m3(__bfloat162float(x[base + j]) * inv); /* saturating */
}
