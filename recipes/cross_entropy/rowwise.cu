/* cross_entropy seed: one block per row, one read of the logits.
 *  - Each thread keeps a running (max, sum of exp(x - max)) with the online rescaling trick:
 *    one rescale per VEC-wide vector at most, UNROLL vectors loaded before any is folded (loads
 *    in flight), streaming hints (the logits are read once).
 *  - The row is read VEC floats at a time after a scalar head up to its first VEC * 4-byte
 *    boundary (a row starts aligned only when row * C is a multiple of VEC), then a scalar tail.
 *  - (max, sum) pairs merge within a warp with __shfl_xor_sync and across warps through one
 *    shared slot per warp, in a fixed order (the same bits every run).
 *  - loss = max + log(sum) - x[target]: one extra load.
 * Knobs: BLOCK (threads per row, a multiple of 32), VEC (1, 2 or 4), UNROLL (vectors in
 * flight per thread). */
/* kevo:launch
return {
  kernels = {
    {name = "cross_entropy", grid = {M}, block = {BLOCK}, shared = 0,
     args = {"logits", "target", "loss", i32(M), i32(C)}},
  },
}
*/

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef UNROLL
#define UNROLL 2
#endif
#if VEC != 1 && VEC != 2 && VEC != 4
#error "VEC must be 1, 2 or 4"
#endif
#if BLOCK % 32 != 0 || BLOCK < 32 || BLOCK > 1024
#error "BLOCK must be a multiple of 32 between 32 and 1024"
#endif
#define WARPS (BLOCK / 32)

struct __align__(4 * VEC) pack {
  float v[VEC];
};

__device__ __forceinline__ float neg_inf() {
  return -__int_as_float(0x7f800000);
}

/* Folds value x into the running (m, s): s is the sum of exp(seen - m). */
__device__ __forceinline__ void online_add(float& m, float& s, float x) {
  if (x > m) {
    s = s * expf(m - x) + 1.0f; /* expf(-inf) is 0: the first value resets s */
    m = x;
  } else {
    s += expf(x - m);
  }
}

/* Folds a whole vector: one rescale at most, then VEC independent exponentials. */
__device__ __forceinline__ void online_add_pack(float& m, float& s, const pack& p) {
  float pm = p.v[0];
#pragma unroll
  for (int k = 1; k < VEC; k++)
    pm = fmaxf(pm, p.v[k]);
  if (pm > m) {
    s *= expf(m - pm);
    m = pm;
  }
#pragma unroll
  for (int k = 0; k < VEC; k++)
    s += expf(p.v[k] - m);
}

/* Combines (m2, s2) into (m, s). Both may be empty (m = -inf, s = 0). */
__device__ __forceinline__ void combine(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == neg_inf()) return;
  s = s * expf(m - mn) + s2 * expf(m2 - mn);
  m = mn;
}

__device__ __forceinline__ pack load_cs(const pack* p) {
  pack out;
#if VEC == 4
  const float4 v = __ldcs(reinterpret_cast<const float4*>(p));
  out.v[0] = v.x, out.v[1] = v.y, out.v[2] = v.z, out.v[3] = v.w;
#elif VEC == 2
  const float2 v = __ldcs(reinterpret_cast<const float2*>(p));
  out.v[0] = v.x, out.v[1] = v.y;
#else
  out.v[0] = __ldcs(reinterpret_cast<const float*>(p));
#endif
  return out;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    cross_entropy(const float* __restrict__ logits, const int* __restrict__ target,
                  float* __restrict__ loss, int M, int C) {
  __shared__ float warp_m[WARPS], warp_s[WARPS];
  const int row = blockIdx.x;
  if (row >= M) return;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const float* xr = logits + (long long)row * C;

  const unsigned long long xa = (unsigned long long)xr;
  int head = (xa & 3) ? C : (int)(((4 * VEC) - (xa & (4 * VEC - 1))) & (4 * VEC - 1)) / 4;
  if (head > C) head = C;
  const int nvec = (C - head) / VEC;
  const pack* xv = reinterpret_cast<const pack*>(xr + head);

  float m = neg_inf(), s = 0.0f;
  for (int j = tid; j < head; j += BLOCK)
    online_add(m, s, xr[j]);
  for (int base = tid; base < nvec; base += BLOCK * UNROLL) {
    pack p[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++)
      if (base + u * BLOCK < nvec) p[u] = load_cs(xv + base + u * BLOCK);
#pragma unroll
    for (int u = 0; u < UNROLL; u++)
      if (base + u * BLOCK < nvec) online_add_pack(m, s, p[u]);
  }
  for (int j = head + nvec * VEC + tid; j < C; j += BLOCK)
    online_add(m, s, xr[j]);

#pragma unroll
  for (int off = 16; off > 0; off >>= 1)
    combine(m, s, __shfl_xor_sync(0xffffffffu, m, off), __shfl_xor_sync(0xffffffffu, s, off));
  if (lane == 0) {
    warp_m[warp] = m;
    warp_s[warp] = s;
  }
  __syncthreads();
  if (warp == 0) {
    m = lane < WARPS ? warp_m[lane] : neg_inf();
    s = lane < WARPS ? warp_s[lane] : 0.0f;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
      combine(m, s, __shfl_xor_sync(0xffffffffu, m, off), __shfl_xor_sync(0xffffffffu, s, off));
    if (lane == 0) loss[row] = (m + logf(s)) - xr[target[row]];
  }
}
