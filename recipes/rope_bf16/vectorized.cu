/* rope_bf16 seed: rotary embedding (GPT-NeoX layout: dimension i pairs with i + D/2) of q and k,
 * token t rotated by the angle row positions[t] of cos_sin (cos in its first D/2 columns, sin in
 * the rest), f32 arithmetic, bf16 out.
 *  - A block takes TPB tokens; its threads walk the (token, head, group of 8 pairs) items of q and
 *    k, UNROLL at a time with every load issued before the math: two 16-byte loads of x (the
 *    group and its partner D/2 later) and the 8 cos and 8 sin (f32, from L1: every head of a
 *    token shares them); two 16-byte stores.
 *  - Needs D % 16 == 0 and 16-byte aligned q, k, q_out, k_out for the vectors; otherwise the same
 *    one pair at a time.
 * Knobs: BLOCK (threads), TPB (tokens per block), UNROLL (items per thread in flight). */
/* kevo:launch
return {
  kernels = {
    {name = "rope_bf16", grid = {cdiv(T, TPB)}, block = {BLOCK}, shared = 0,
     args = {"positions", "cos_sin", "q", "k", "q_out", "k_out", i32(T), i32(HQ), i32(HK),
             i32(D)}},
  },
}
*/
#include <cuda_bf16.h>

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef TPB
#define TPB 2
#endif
#ifndef UNROLL
#define UNROLL 2
#endif

__device__ __forceinline__ float bf_at(const uint4& v, int e) {
  const unsigned w = e < 2 ? v.x : e < 4 ? v.y : e < 6 ? v.z : v.w;
  return __uint_as_float((e & 1) ? (w & 0xffff0000u) : (w << 16));
}
__device__ __forceinline__ unsigned pack2(float a, float b) {
  __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<unsigned*>(&h);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    rope_bf16(const long long* __restrict__ positions, const float* __restrict__ cos_sin,
              const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
              __nv_bfloat16* __restrict__ q_out, __nv_bfloat16* __restrict__ k_out, int T, int HQ,
              int HK, int D) {
  const int half = D / 2, H = HQ + HK;
  const int t0 = blockIdx.x * TPB;
  const int ntok = min(TPB, T - t0);
  const bool vec = half % 8 == 0 && (((unsigned long long)q | (unsigned long long)k |
                                      (unsigned long long)q_out | (unsigned long long)k_out |
                                      (unsigned long long)cos_sin) & 15) == 0;
  if (vec) {
    const int groups = half / 8, per_tok = H * groups, items = ntok * per_tok;
    for (int base = threadIdx.x; base < items; base += BLOCK * UNROLL) {
      uint4 a[UNROLL], b[UNROLL];
      float4 c[UNROLL][2], s[UNROLL][2];
      long long off[UNROLL]; /* element offset of the group's first half within q or k */
      bool isq[UNROLL], live[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; u++) {
        const int it = base + u * BLOCK;
        live[u] = it < items;
        if (!live[u]) continue;
        const int tl = it / per_tok, r = it - tl * per_tok;
        const int head = r / groups, j = (r - head * groups) * 8;
        const int t = t0 + tl;
        isq[u] = head < HQ;
        off[u] = isq[u] ? ((long long)t * HQ + head) * D + j
                        : ((long long)t * HK + (head - HQ)) * D + j;
        const __nv_bfloat16* src = isq[u] ? q : k;
        a[u] = *reinterpret_cast<const uint4*>(src + off[u]);
        b[u] = *reinterpret_cast<const uint4*>(src + off[u] + half);
        const float* cs = cos_sin + positions[t] * D + j;
        c[u][0] = *reinterpret_cast<const float4*>(cs);
        c[u][1] = *reinterpret_cast<const float4*>(cs + 4);
        s[u][0] = *reinterpret_cast<const float4*>(cs + half);
        s[u][1] = *reinterpret_cast<const float4*>(cs + half + 4);
      }
#pragma unroll
      for (int u = 0; u < UNROLL; u++) {
        if (!live[u]) continue;
        const float cc[8] = {c[u][0].x, c[u][0].y, c[u][0].z, c[u][0].w,
                             c[u][1].x, c[u][1].y, c[u][1].z, c[u][1].w};
        const float ss[8] = {s[u][0].x, s[u][0].y, s[u][0].z, s[u][0].w,
                             s[u][1].x, s[u][1].y, s[u][1].z, s[u][1].w};
        float o1[8], o2[8];
#pragma unroll
        for (int e = 0; e < 8; e++) {
          const float x1 = bf_at(a[u], e), x2 = bf_at(b[u], e);
          o1[e] = x1 * cc[e] - x2 * ss[e];
          o2[e] = x2 * cc[e] + x1 * ss[e];
        }
        __nv_bfloat16* dst = isq[u] ? q_out : k_out;
        *reinterpret_cast<uint4*>(dst + off[u]) = make_uint4(
            pack2(o1[0], o1[1]), pack2(o1[2], o1[3]), pack2(o1[4], o1[5]), pack2(o1[6], o1[7]));
        *reinterpret_cast<uint4*>(dst + off[u] + half) = make_uint4(
            pack2(o2[0], o2[1]), pack2(o2[2], o2[3]), pack2(o2[4], o2[5]), pack2(o2[6], o2[7]));
      }
    }
    return;
  }
  const int per_tok = H * half, items = ntok * per_tok;
  for (int it = threadIdx.x; it < items; it += BLOCK) {
    const int tl = it / per_tok, r = it - tl * per_tok;
    const int head = r / half, i = r - head * half;
    const int t = t0 + tl;
    const bool qq = head < HQ;
    const long long off = qq ? ((long long)t * HQ + head) * D + i
                             : ((long long)t * HK + (head - HQ)) * D + i;
    const __nv_bfloat16* src = qq ? q : k;
    __nv_bfloat16* dst = qq ? q_out : k_out;
    const float* cs = cos_sin + positions[t] * D;
    const float x1 = __bfloat162float(src[off]), x2 = __bfloat162float(src[off + half]);
    const float c = cs[i], s = cs[half + i];
    dst[off] = __float2bfloat16(x1 * c - x2 * s);
    dst[off + half] = __float2bfloat16(x2 * c + x1 * s);
  }
}
