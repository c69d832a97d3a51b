/* decode_attention seed: split-KV ("flash decoding") on the tensor cores (mma.sync m16n8k16
 * bf16, f32 accumulation), two kernels.
 *  decode_attn_mma: a block per (chunk of the cache, batch, kv head); each warp takes 16-token
 *    tiles of the chunk in turn and keeps its own online softmax (exp2 domain) for the G <= 8
 *    query heads of the kv head, so each K and V row is read once for the whole group.
 *    - Scores S = Q K^T: Q (the G heads as rows, padded to 16) times K^T, 8 k-steps of 16 dims.
 *      The dot product does not care in which order the dims are summed, so a lane's B fragment
 *      is taken straight from its own 16-byte loads of a K row (4 lanes per token, 8 dims each),
 *      and Q's A fragments use the same order: no shared memory, no shuffles.
 *    - Output O^T = V^T P^T: the dims are the 16 rows of each of 8 tiles, the heads the 8
 *      columns. The score tile's accumulator layout is exactly the B fragment P^T needs, and a
 *      lane builds V^T's A fragments from 16-byte loads of 4 V rows (byte permutes).
 *    - P as a bf16 pair (hi + lo, two mma): one bf16 is off by 2^-9 of p, which with large V
 *      on short caches does not average out under the tolerance.
 *    - The next tile's K loads go out after this tile's scores, its V loads after P V, so loads
 *      stay in flight while the warp computes.
 *    The warps' states are merged through shared memory; the chunk's unnormalised output and
 *    (max, sum) go to scratch.
 *  decode_attn_combine: a block per query head merges the chunks' partials and writes bf16.
 * Knobs: WARPS (per block), TARGET (the most blocks: the split count is TARGET / (B * HK)), MINB
 * (blocks per SM the registers must allow: 1 leaves ptxas free, about 180 registers). */
/* kevo:launch
local HQ = HK * G
local splits = max(1, min(cdiv(S, 64), TARGET // (B * HK))) -- at most TARGET blocks
local chunk = cdiv(S, splits)
splits = cdiv(S, chunk)
return {
  scratch = {part_o = {bytes = B * HQ * splits * 128 * 4}, part_ml = {bytes = B * HQ * splits * 8}},
  kernels = {
    {name = "decode_attn_mma", grid = {splits, B * HK}, block = {32 * WARPS}, shared = 0,
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
#ifndef TARGET
#define TARGET 1056
#endif
#ifndef MINB
#define MINB 1
#endif
#define D 128
#define QSCALE 0.12751743074420124f /* log2(e) / sqrt(128) */

__device__ __forceinline__ float neg_inf() { return -__int_as_float(0x7f800000); }

/* d += A B, m16n8k16, A row-major (a0..a3), B column-major (b0, b1), bf16 in, f32 out */
__device__ __forceinline__ void mma16816(float (&d)[4], unsigned a0, unsigned a1, unsigned a2,
                                         unsigned a3, unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* two floats as bf16x2, x in the low half */
__device__ __forceinline__ unsigned pack_bf16(float x, float y) {
  __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
  return *reinterpret_cast<unsigned*>(&h);
}
__device__ __forceinline__ float bf16_round(float x) {
  return __bfloat162float(__float2bfloat16(x));
}
__device__ __forceinline__ unsigned word(const uint4& v, int w) {
  return w == 0 ? v.x : w == 1 ? v.y : w == 2 ? v.z : v.w;
}
/* element e (0..7) of a and of b (rows of 8 bf16) as a bf16x2, a's in the low half */
__device__ __forceinline__ unsigned pair(const uint4& a, const uint4& b, int e) {
  return __byte_perm(word(a, e >> 1), word(b, e >> 1), (e & 1) ? 0x7632 : 0x5410);
}
__device__ __forceinline__ uint4 load_row(const __nv_bfloat16* p, bool ok) {
  return ok ? *reinterpret_cast<const uint4*>(p) : make_uint4(0, 0, 0, 0);
}

extern "C" __global__ void __launch_bounds__(32 * WARPS, MINB)
    decode_attn_mma(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                    const __nv_bfloat16* __restrict__ v, float* __restrict__ part_o,
                    float* __restrict__ part_ml, int HK, int G, int S, int splits, int chunk) {
  __shared__ float sm_acc[WARPS][8][D];
  __shared__ float sm_m[WARPS][8], sm_l[WARPS][8];
  const int split = blockIdx.x, bh = blockIdx.y; /* bh = b * HK + kv head */
  const int c0 = split * chunk, c1 = min(S, c0 + chunk);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, r = lane >> 2, c = lane & 3;
  const __nv_bfloat16* kb = k + (long long)bh * S * D;
  const __nv_bfloat16* vb = v + (long long)bh * S * D;

  /* Q's A fragments, head r (rows 8..15 and heads >= G are zero): k-step 2j + h takes dims
   * 32j + 8c + 4h .. + 3 of a 16-byte load, the order K's B fragments below use */
  unsigned qa[8][2];
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const uint4 x = load_row(q + ((long long)bh * G + r) * D + 32 * j + 8 * c, r < G);
    qa[2 * j][0] = x.x;
    qa[2 * j][1] = x.y;
    qa[2 * j + 1][0] = x.z;
    qa[2 * j + 1][1] = x.w;
  }

  /* acc[i]: O^T tile i, rows dims 16r + i (c0, c1) and 16r + 8 + i (c2, c3), columns heads 2c
   * (c0, c2) and 2c + 1 (c1, c3). m, l: head r's running max and this lane's part of its sum. */
  float acc[8][4];
#pragma unroll
  for (int i = 0; i < 8; i++) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
  float m = neg_inf(), l = 0.0f;

  /* kr[nt][j]: token t0 + 8 nt + r, dims 32j + 8c .. + 7; vr[a][h]: token t0 + 2c + (a & 1) +
   * 8 (a >> 1), dims 16r + 8h .. + 7 */
  uint4 kr[2][4], vr[4][2];
  int t0 = c0 + 16 * warp;
#pragma unroll
  for (int nt = 0; nt < 2; nt++)
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const int t = t0 + 8 * nt + r;
      kr[nt][j] = load_row(kb + (long long)t * D + 32 * j + 8 * c, t < c1);
    }
#pragma unroll
  for (int a = 0; a < 4; a++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const int t = t0 + 2 * c + (a & 1) + 8 * (a >> 1);
      vr[a][h] = load_row(vb + (long long)t * D + 16 * r + 8 * h, t < c1);
    }

  for (; t0 < c1; t0 += 16 * WARPS) {
    const int tn = t0 + 16 * WARPS;
    float s[2][4];
#pragma unroll
    for (int nt = 0; nt < 2; nt++) {
      s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < 8; kk++) {
        const uint4& x = kr[nt][kk >> 1];
        const unsigned b0 = (kk & 1) ? x.z : x.x, b1 = (kk & 1) ? x.w : x.y;
        mma16816(s[nt], qa[kk][0], 0u, qa[kk][1], 0u, b0, b1);
      }
    }
#pragma unroll
    for (int nt = 0; nt < 2; nt++) /* the next tile's K, in flight during the rest */
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const int t = tn + 8 * nt + r;
        kr[nt][j] = load_row(kb + (long long)t * D + 32 * j + 8 * c, t < c1);
      }
    /* head r's scores for tokens t0 + 2c, + 1, t0 + 8 + 2c, + 1 */
    float sc[4] = {s[0][0], s[0][1], s[1][0], s[1][1]};
    float mx = neg_inf();
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const int t = t0 + 2 * c + (e & 1) + 8 * (e >> 1);
      sc[e] = t < c1 ? sc[e] * QSCALE : neg_inf();
      mx = fmaxf(mx, sc[e]);
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float mn = fmaxf(m, mx); /* finite: token t0 is in the chunk */
    const float alpha = exp2f(m - mn); /* 0 while m is -inf */
    float p[4];
#pragma unroll
    for (int e = 0; e < 4; e++) p[e] = exp2f(sc[e] - mn); /* 0 past the chunk */
    l = l * alpha + (p[0] + p[1]) + (p[2] + p[3]);
    m = mn;
    /* rescale the output of heads 2c and 2c + 1 by their alphas (held by lanes 8c and 8c + 4) */
    const float ae = __shfl_sync(0xffffffffu, alpha, 8 * c);
    const float ao = __shfl_sync(0xffffffffu, alpha, 8 * c + 4);
#pragma unroll
    for (int i = 0; i < 8; i++) {
      acc[i][0] *= ae;
      acc[i][1] *= ao;
      acc[i][2] *= ae;
      acc[i][3] *= ao;
    }
    /* P^T's B fragments (the score tile's layout): hi and lo bf16 halves */
    float ph[4];
#pragma unroll
    for (int e = 0; e < 4; e++) ph[e] = bf16_round(p[e]);
    const unsigned bh0 = pack_bf16(ph[0], ph[1]), bh1 = pack_bf16(ph[2], ph[3]);
    const unsigned bl0 = pack_bf16(p[0] - ph[0], p[1] - ph[1]);
    const unsigned bl1 = pack_bf16(p[2] - ph[2], p[3] - ph[3]);
#pragma unroll
    for (int i = 0; i < 8; i++) {
      const unsigned a0 = pair(vr[0][0], vr[1][0], i), a1 = pair(vr[0][1], vr[1][1], i);
      const unsigned a2 = pair(vr[2][0], vr[3][0], i), a3 = pair(vr[2][1], vr[3][1], i);
      mma16816(acc[i], a0, a1, a2, a3, bh0, bh1);
      mma16816(acc[i], a0, a1, a2, a3, bl0, bl1);
    }
#pragma unroll
    for (int a = 0; a < 4; a++) /* the next tile's V */
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const int t = tn + 2 * c + (a & 1) + 8 * (a >> 1);
        vr[a][h] = load_row(vb + (long long)t * D + 16 * r + 8 * h, t < c1);
      }
  }

  /* merge the warps through shared memory */
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);
  if (c == 0) {
    sm_m[warp][r] = m;
    sm_l[warp][r] = l;
  }
#pragma unroll
  for (int i = 0; i < 8; i++) {
    sm_acc[warp][2 * c][16 * r + i] = acc[i][0];
    sm_acc[warp][2 * c + 1][16 * r + i] = acc[i][1];
    sm_acc[warp][2 * c][16 * r + 8 + i] = acc[i][2];
    sm_acc[warp][2 * c + 1][16 * r + 8 + i] = acc[i][3];
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < G * D; idx += blockDim.x) {
    const int g = idx / D, d = idx % D;
    float M = neg_inf();
#pragma unroll
    for (int h = 0; h < WARPS; h++) M = fmaxf(M, sm_m[h][g]);
    float L = 0.0f, O = 0.0f;
    if (M != neg_inf()) {
#pragma unroll
      for (int h = 0; h < WARPS; h++) {
        const float w = exp2f(sm_m[h][g] - M); /* 0 for a warp that saw no token */
        L = fmaf(sm_l[h][g], w, L);
        O = fmaf(sm_acc[h][g][d], w, O);
      }
    }
    const long long pi = ((long long)bh * G + g) * splits + split;
    part_o[pi * D + d] = O;
    if (d == 0) {
      part_ml[pi * 2] = M;
      part_ml[pi * 2 + 1] = L;
    }
  }
}

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
