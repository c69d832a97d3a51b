/* decode_attention reference: a block per (batch, query head), 4 warps; warp w takes tokens
 * w, w + 4, ...; each lane holds 4 of the 128 dims, scores are reduced over the warp, and each
 * warp keeps a running (max, sum, output) in f32 (online softmax), merged through shared memory
 * at the end. K and V are read once per query head (G times per kv head). Plain on purpose: it is
 * the yardstick. */
/* kevo:launch
return {
  kernels = {
    {name = "decode_attention", grid = {B * HK * G}, block = {128}, shared = 0,
     args = {"q", "k", "v", "o", i32(HK), i32(G), i32(S)}},
  },
}
*/
#include <cuda_bf16.h>

#define D 128

extern "C" __global__ void decode_attention(const __nv_bfloat16* q, const __nv_bfloat16* k,
                                            const __nv_bfloat16* v, __nv_bfloat16* o, int HK,
                                            int G, int S) {
  __shared__ float sm[4][D + 2];
  const int head = blockIdx.x; /* b * HQ + hq */
  const int b = head / (HK * G), hk = (head % (HK * G)) / G;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const __nv_bfloat16* kb = k + ((long long)b * HK + hk) * S * D;
  const __nv_bfloat16* vb = v + ((long long)b * HK + hk) * S * D;
  const float scale = 1.0f / sqrtf((float)D);
  float qf[4], acc[4] = {0, 0, 0, 0};
  for (int e = 0; e < 4; e++) qf[e] = __bfloat162float(q[(long long)head * D + lane * 4 + e]);
  float m = -__int_as_float(0x7f800000), l = 0.0f;
  for (int s = warp; s < S; s += 4) {
    float dot = 0.0f;
    for (int e = 0; e < 4; e++) dot += qf[e] * __bfloat162float(kb[(long long)s * D + lane * 4 + e]);
    for (int off = 16; off > 0; off >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, off);
    dot *= scale;
    const float mn = fmaxf(m, dot);
    const float alpha = expf(m - mn), p = expf(dot - mn);
    l = l * alpha + p;
    for (int e = 0; e < 4; e++)
      acc[e] = acc[e] * alpha + p * __bfloat162float(vb[(long long)s * D + lane * 4 + e]);
    m = mn;
  }
  for (int e = 0; e < 4; e++) sm[warp][lane * 4 + e] = acc[e];
  if (lane == 0) {
    sm[warp][D] = m;
    sm[warp][D + 1] = l;
  }
  __syncthreads();
  const int d = threadIdx.x;
  float M = -__int_as_float(0x7f800000);
  for (int w = 0; w < 4; w++) M = fmaxf(M, sm[w][D]);
  float L = 0.0f, O = 0.0f;
  for (int w = 0; w < 4; w++) {
    if (sm[w][D] == -__int_as_float(0x7f800000)) continue; /* a warp that saw no token */
    const float f = expf(sm[w][D] - M);
    L += sm[w][D + 1] * f;
    O += sm[w][d] * f;
  }
  o[(long long)head * D + d] = __float2bfloat16(O / L);
}
