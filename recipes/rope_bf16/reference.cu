/* rope_bf16 reference: one thread per (token, head, pair), q heads first, then k heads; f32.
 * Plain on purpose: it is the yardstick. */
/* kevo:launch
return {
  kernels = {
    {name = "rope_bf16", grid = {cdiv(T * (HQ + HK) * (D // 2), 256)}, block = {256}, shared = 0,
     args = {"positions", "cos_sin", "q", "k", "q_out", "k_out", i32(T), i32(HQ), i32(HK),
             i32(D)}},
  },
}
*/
#include <cuda_bf16.h>

extern "C" __global__ void rope_bf16(const long long* positions, const float* cos_sin,
                                     const __nv_bfloat16* q, const __nv_bfloat16* k,
                                     __nv_bfloat16* q_out, __nv_bfloat16* k_out, int T, int HQ,
                                     int HK, int D) {
  const int half = D / 2;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)T * (HQ + HK) * half) return;
  const long long t = i / ((long long)(HQ + HK) * half);
  const int head = (int)(i / half % (HQ + HK)), d = (int)(i % half);
  const bool qq = head < HQ;
  const long long off = qq ? (t * HQ + head) * D + d : (t * HK + head - HQ) * D + d;
  const __nv_bfloat16* src = qq ? q : k;
  __nv_bfloat16* dst = qq ? q_out : k_out;
  const float* cs = cos_sin + positions[t] * D;
  const double x1 = __bfloat162float(src[off]), x2 = __bfloat162float(src[off + half]);
  const double c = cs[d], s = cs[half + d];
  dst[off] = __float2bfloat16((float)(x1 * c - x2 * s));
  dst[off + half] = __float2bfloat16((float)(x2 * c + x1 * s));
}
