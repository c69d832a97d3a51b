/* decode_attention seed: split-KV ("flash decoding") on CUDA cores, two kernels.
 *  decode_attn_partial: a block per (chunk of the cache, batch, kv head) handles every query
 *    head of that kv head (the G heads of a group share each K and V row: read once). Its warps
 *    split into half-warps of 16 lanes; a half-warp takes TT consecutive tokens at a time, lane
 *    l holding dims 8l .. 8l + 7 (one 16-byte load of K and one of V per token), all 2 * TT
 *    loads issued before the math. Scores come from 8 fmas and four __shfl_xor_sync per head, in
 *    the exp2 domain (q is prescaled by log2(e) / sqrt(128)); the running (max, sum, output) of
 *    each head is rescaled once per TT tokens. The half-warps' states are merged through shared
 *    memory (shuffles within a warp first) and the chunk's unnormalised output and (max, sum) go to scratch.
 *  decode_attn_combine: a block per query head merges the chunks' partials and writes bf16.
 * Heads are processed GG at a time (8, 4, 2 or 1: the largest that divides G), a compile-time
 * count so that q and the output accumulators stay in registers; one entry point per GG
 * (decode_attn_partial8 .. 1), chosen by the launch, so each has only the registers it needs.
 * Knobs: WARPS (per block), TT (tokens per half-warp step), TARGET (the most blocks: the split
 * count is TARGET / (B * HK)), PF (1: the next step's K and V loads are issued before this step's
 * math, so loads stay in flight while a warp computes). */
/* kevo:launch
local HQ = HK * G
local splits = max(1, min(cdiv(S, 64), TARGET // (B * HK))) -- at most TARGET blocks: no spare wave
local chunk = cdiv(S, splits)
splits = cdiv(S, chunk)
local gg = (G % 8 == 0) and 8 or (G % 4 == 0) and 4 or (G % 2 == 0) and 2 or 1
return {
  scratch = {part_o = {bytes = B * HQ * splits * 128 * 4}, part_ml = {bytes = B * HQ * splits * 8}},
  kernels = {
    {name = "decode_attn_partial" .. gg, grid = {splits, B * HK}, block = {32 * WARPS}, shared = 0,
     args = {"q", "k", "v", "part_o", "part_ml", i32(HK), i32(G), i32(S), i32(splits),
             i32(chunk)}},
    {name = "decode_attn_combine", grid = {B * HQ}, block = {128}, shared = 0,
     args = {"part_o", "part_ml", "o", i32(splits)}},
  },
}
*/
#include <cuda_bf16.h>

#ifndef WARPS
#define WARPS 4
#endif
#ifndef TT
#define TT 4
#endif
#ifndef TARGET
#define TARGET 1056
#endif
#ifndef PF
#define PF 0
#endif
#define D 128
#define NG (2 * WARPS) /* half-warps per block */
#define QSCALE 0.12751743074420124f /* log2(e) / sqrt(128) */

__device__ __forceinline__ float neg_inf() { return -__int_as_float(0x7f800000); }
__device__ __forceinline__ float bf_at(const uint4& v, int e) {
  const unsigned w = e < 2 ? v.x : e < 4 ? v.y : e < 6 ? v.z : v.w;
  return __uint_as_float((e & 1) ? (w & 0xffff0000u) : (w << 16));
}

/* K and V rows t .. t + TT - 1 of this lane's 8 dims (zeros past c1) */
__device__ __forceinline__ void load_tokens(uint4 (&kr)[TT], uint4 (&vr)[TT],
                                            const __nv_bfloat16* __restrict__ kb,
                                            const __nv_bfloat16* __restrict__ vb, int t, int c1,
                                            int dim) {
#pragma unroll
  for (int j = 0; j < TT; j++) {
    if (t + j < c1) {
      kr[j] = *reinterpret_cast<const uint4*>(kb + (long long)(t + j) * D + dim);
      vr[j] = *reinterpret_cast<const uint4*>(vb + (long long)(t + j) * D + dim);
    } else {
      kr[j] = make_uint4(0, 0, 0, 0);
      vr[j] = make_uint4(0, 0, 0, 0);
    }
  }
}

__shared__ float sm_acc[WARPS][8][D];
__shared__ float sm_m[WARPS][8], sm_l[WARPS][8];

template <int GG>
__device__ __forceinline__ void heads(const __nv_bfloat16* __restrict__ q,
                                      const __nv_bfloat16* __restrict__ kb,
                                      const __nv_bfloat16* __restrict__ vb, float* part_o,
                                      float* part_ml, int qhead0, int c0, int c1, int split,
                                      int splits) {
  const int lane = threadIdx.x & 15, gi = threadIdx.x >> 4, dim = lane * 8;
  float qf[GG][8], acc[GG][8], m[GG], l[GG];
#pragma unroll
  for (int g = 0; g < GG; g++) {
    const uint4 qv = *reinterpret_cast<const uint4*>(q + (long long)(qhead0 + g) * D + dim);
#pragma unroll
    for (int e = 0; e < 8; e++) {
      qf[g][e] = bf_at(qv, e) * QSCALE;
      acc[g][e] = 0.0f;
    }
    m[g] = neg_inf();
    l[g] = 0.0f;
  }
  /* both half-warps of a warp take the same number of steps (their shuffles need each other):
   * the loop runs on the warp's first token, a half past the chunk's end masks its tokens */
  const int half = gi & 1;
  uint4 kr[TT], vr[TT];
  const int first = c0 + (gi >> 1) * 2 * TT;
#if PF
  load_tokens(kr, vr, kb, vb, first + half * TT, c1, dim);
#endif
  for (int tw = first; tw < c1; tw += NG * TT) {
    const int t = tw + half * TT;
#if PF /* the next step's loads go out before this step's math */
    uint4 kn[TT], vn[TT];
    load_tokens(kn, vn, kb, vb, t + NG * TT, c1, dim);
#else
    load_tokens(kr, vr, kb, vb, t, c1, dim);
#endif
#pragma unroll
    for (int g = 0; g < GG; g++) {
      float sc[TT];
      float mx = m[g];
#pragma unroll
      for (int j = 0; j < TT; j++) {
        float s = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; e++) s = fmaf(qf[g][e], bf_at(kr[j], e), s);
#pragma unroll
        for (int o = 8; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        sc[j] = t + j < c1 ? s : neg_inf();
        mx = fmaxf(mx, sc[j]);
      }
      /* mx is -inf only while this half has seen no token: nothing to rescale or add */
      const float alpha = mx == neg_inf() ? 1.0f : exp2f(m[g] - mx); /* 0 after m = -inf */
      m[g] = mx;
      l[g] *= alpha;
#pragma unroll
      for (int e = 0; e < 8; e++) acc[g][e] *= alpha;
#pragma unroll
      for (int j = 0; j < TT; j++) {
        const float p = sc[j] == neg_inf() ? 0.0f : exp2f(sc[j] - mx);
        l[g] += p;
#pragma unroll
        for (int e = 0; e < 8; e++) acc[g][e] = fmaf(p, bf_at(vr[j], e), acc[g][e]);
      }
    }
#if PF
#pragma unroll
    for (int j = 0; j < TT; j++) {
      kr[j] = kn[j];
      vr[j] = vn[j];
    }
#endif
  }
  /* merge the two half-warps of each warp by shuffles, then the warps through shared memory */
#pragma unroll
  for (int g = 0; g < GG; g++) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m[g], 16);
    const float l2 = __shfl_xor_sync(0xffffffffu, l[g], 16);
    const float mn = fmaxf(m[g], m2);
    const float w1 = mn == neg_inf() ? 0.0f : exp2f(m[g] - mn);
    const float w2 = mn == neg_inf() ? 0.0f : exp2f(m2 - mn);
    m[g] = mn;
    l[g] = l[g] * w1 + l2 * w2;
#pragma unroll
    for (int e = 0; e < 8; e++)
      acc[g][e] = acc[g][e] * w1 + __shfl_xor_sync(0xffffffffu, acc[g][e], 16) * w2;
  }
  const int warp = threadIdx.x >> 5;
  if ((threadIdx.x & 31) < 16) {
#pragma unroll
    for (int g = 0; g < GG; g++) {
#pragma unroll
      for (int e = 0; e < 8; e++) sm_acc[warp][g][dim + e] = acc[g][e];
      if (lane == 0) {
        sm_m[warp][g] = m[g];
        sm_l[warp][g] = l[g];
      }
    }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < GG * D; idx += blockDim.x) {
    const int g = idx / D, d = idx % D;
    float M = neg_inf();
#pragma unroll
    for (int h = 0; h < WARPS; h++) M = fmaxf(M, sm_m[h][g]);
    float L = 0.0f, O = 0.0f;
    if (M != neg_inf()) {
#pragma unroll
      for (int h = 0; h < WARPS; h++) {
        const float w = exp2f(sm_m[h][g] - M);
        L = fmaf(sm_l[h][g], w, L);
        O = fmaf(sm_acc[h][g][d], w, O);
      }
    }
    const long long p = (long long)(qhead0 + g) * splits + split;
    part_o[p * D + d] = O;
    if (d == 0) {
      part_ml[p * 2] = M;
      part_ml[p * 2 + 1] = L;
    }
  }
  __syncthreads(); /* the shared state is reused by the next group of heads */
}

/* One entry per head-group size GG (the launch picks the largest of 8, 4, 2, 1 dividing G), so
 * each gets the registers its own GG needs rather than the largest one's. */
#define PARTIAL(GG)                                                                              \
  extern "C" __global__ void __launch_bounds__(32 * WARPS) decode_attn_partial##GG(             \
      const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,                 \
      const __nv_bfloat16* __restrict__ v, float* __restrict__ part_o,                          \
      float* __restrict__ part_ml, int HK, int G, int S, int splits, int chunk) {               \
    const int split = blockIdx.x, bh = blockIdx.y; /* bh = b * HK + kv head */                 \
    const int c0 = split * chunk, c1 = min(S, c0 + chunk);                                       \
    const __nv_bfloat16* kb = k + (long long)bh * S * D;                                         \
    const __nv_bfloat16* vb = v + (long long)bh * S * D;                                         \
    /* q is [B, HK * G, D]: kv head bh's group of query heads starts at bh * G */               \
    for (int g = 0; g < G; g += GG)                                                              \
      heads<GG>(q, kb, vb, part_o, part_ml, bh * G + g, c0, c1, split, splits);                  \
  }
PARTIAL(8)
PARTIAL(4)
PARTIAL(2)
PARTIAL(1)

extern "C" __global__ void __launch_bounds__(128)
    decode_attn_combine(const float* __restrict__ part_o, const float* __restrict__ part_ml,
                        __nv_bfloat16* __restrict__ o, int splits) {
  const int head = blockIdx.x, d = threadIdx.x;
  const float* ml = part_ml + (long long)head * splits * 2;
  float M = neg_inf();
  for (int s = 0; s < splits; s++) M = fmaxf(M, ml[2 * s]);
  float L = 0.0f, O = 0.0f;
  for (int s = 0; s < splits; s++) {
    const float w = exp2f(ml[2 * s] - M);
    L = fmaf(ml[2 * s + 1], w, L);
    O = fmaf(part_o[((long long)head * splits + s) * D + d], w, O);
  }
  o[(long long)head * D + d] = __float2bfloat16(O / L);
}
