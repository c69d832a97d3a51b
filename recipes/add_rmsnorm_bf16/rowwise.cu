/* add_rmsnorm_bf16 seed: h = bf16(x + residual) is written to residual_out, and
 * y = h / sqrt(mean(h^2) + 1e-6) * weight, f32 arithmetic, one block per row.
 *  - Fast path (N % 8 == 0, 16-byte aligned tensors): 16-byte loads and stores of 8 bf16. When the
 *    row fits in registers (N <= BLOCK * CACHE * 8) h stays there between the sum of squares and
 *    the write of y: x and residual are read once, y and residual_out written once.
 *  - Longer rows or other N: the second pass reads h back from residual_out (this block's own
 *    writes, mostly from L2).
 *  - The sum of squares: __shfl_xor_sync within a warp, one shared slot per warp across warps.
 * Knobs: BLOCK (threads, a multiple of 32), CACHE (16-byte vectors per thread kept in registers). */
/* kevo:launch
return {
  kernels = {
    {name = "add_rmsnorm_bf16", grid = {M}, block = {BLOCK}, shared = 0,
     args = {"x", "residual", "weight", "y", "residual_out", i32(M), i32(N)}},
  },
}
*/
#include <cuda_bf16.h>

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
#define EPS 1e-6f

__device__ __forceinline__ float bf_at(const uint4& v, int e) {
  const unsigned w = e < 2 ? v.x : e < 4 ? v.y : e < 6 ? v.z : v.w;
  return __uint_as_float((e & 1) ? (w & 0xffff0000u) : (w << 16));
}
__device__ __forceinline__ unsigned pack2(float a, float b) {
  __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<unsigned*>(&h);
}
/* h = bf16(a + b), 8 lanes at once; ss += h^2 (of the rounded h) */
__device__ __forceinline__ uint4 add8(const uint4& a, const uint4& b, float& ss) {
  float h[8];
#pragma unroll
  for (int e = 0; e < 8; e++) h[e] = bf_at(a, e) + bf_at(b, e);
  const uint4 r = make_uint4(pack2(h[0], h[1]), pack2(h[2], h[3]), pack2(h[4], h[5]),
                             pack2(h[6], h[7]));
#pragma unroll
  for (int e = 0; e < 8; e++) {
    const float q = bf_at(r, e);
    ss = fmaf(q, q, ss);
  }
  return r;
}
__device__ __forceinline__ uint4 norm8(const uint4& h, const uint4& w, float rstd) {
  float o[8];
#pragma unroll
  for (int e = 0; e < 8; e++) o[e] = bf_at(h, e) * rstd * bf_at(w, e);
  return make_uint4(pack2(o[0], o[1]), pack2(o[2], o[3]), pack2(o[4], o[5]), pack2(o[6], o[7]));
}

__device__ __forceinline__ float block_sum(float v, float* slots) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) slots[threadIdx.x >> 5] = v;
  __syncthreads();
  v = 0.0f;
#pragma unroll
  for (int w = 0; w < WARPS; w++) v += slots[w];
  return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    add_rmsnorm_bf16(const __nv_bfloat16* __restrict__ x,
                     const __nv_bfloat16* __restrict__ residual,
                     const __nv_bfloat16* __restrict__ weight, __nv_bfloat16* __restrict__ y,
                     __nv_bfloat16* __restrict__ residual_out, int M, int N) {
  __shared__ float slots[WARPS];
  const int row = blockIdx.x, tid = threadIdx.x;
  if (row >= M) return;
  const long long base = (long long)row * N;
  const bool vec = N % 8 == 0 &&
                   (((unsigned long long)x | (unsigned long long)residual |
                     (unsigned long long)weight | (unsigned long long)y |
                     (unsigned long long)residual_out) & 15) == 0;
  const int nvec = N / 8;
  float ss = 0.0f;
  if (vec) {
    const uint4* xv = reinterpret_cast<const uint4*>(x + base);
    const uint4* rv = reinterpret_cast<const uint4*>(residual + base);
    const uint4* wv = reinterpret_cast<const uint4*>(weight);
    uint4* hv = reinterpret_cast<uint4*>(residual_out + base);
    uint4* yv = reinterpret_cast<uint4*>(y + base);
    if (nvec <= CACHE * BLOCK) { /* one read: h stays in registers */
      uint4 a[CACHE], b[CACHE];
#pragma unroll
      for (int k = 0; k < CACHE; k++) { /* all loads first: CACHE * 32 bytes in flight */
        const int i = tid + k * BLOCK;
        if (i < nvec) {
          a[k] = xv[i];
          b[k] = rv[i];
        }
      }
#pragma unroll
      for (int k = 0; k < CACHE; k++) {
        const int i = tid + k * BLOCK;
        if (i < nvec) {
          a[k] = add8(a[k], b[k], ss);
          hv[i] = a[k];
        }
      }
      const float rstd = rsqrtf(block_sum(ss, slots) / N + EPS);
#pragma unroll
      for (int k = 0; k < CACHE; k++) {
        const int i = tid + k * BLOCK;
        if (i < nvec) yv[i] = norm8(a[k], wv[i], rstd);
      }
      return;
    }
    for (int i = tid; i < nvec; i += BLOCK) hv[i] = add8(xv[i], rv[i], ss);
    const float rstd = rsqrtf(block_sum(ss, slots) / N + EPS);
    for (int i = tid; i < nvec; i += BLOCK) yv[i] = norm8(hv[i], wv[i], rstd);
    return;
  }
  for (int j = tid; j < N; j += BLOCK) {
    const __nv_bfloat16 h =
        __float2bfloat16(__bfloat162float(x[base + j]) + __bfloat162float(residual[base + j]));
    residual_out[base + j] = h;
    const float q = __bfloat162float(h);
    ss = fmaf(q, q, ss);
  }
  const float rstd = rsqrtf(block_sum(ss, slots) / N + EPS);
  for (int j = tid; j < N; j += BLOCK)
    y[base + j] = __float2bfloat16(__bfloat162float(residual_out[base + j]) * rstd *
                                   __bfloat162float(weight[j]));
}
