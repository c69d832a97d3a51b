/* topk seed: the K largest of each row, sorted, ties to the lower index, one block per row.
 *  - Every element has a unique 64-bit key: its value's bits made order-preserving (sign flip)
 *    above 0xffffffff - index (the lower index ranks higher among equal values).
 *  - A first threshold comes from the first round: the K-th best of the threads' own maxima.
 *  - The row is streamed once in rounds of BLOCK * UNROLL 16-byte loads (all issued before any
 *    use); an element joins a shared candidate buffer only when its key beats the threshold (the
 *    K-th best key known so far: a float compare first, the full key only then), its slot taken
 *    by one atomicAdd per warp (ballot + popc).
 *  - When the buffer could overflow in the next round, it is sorted (bitonic, in shared memory)
 *    and cut to its K best, and the threshold rises to the K-th. For random rows that happens
 *    rarely: after the first threshold few elements beat it (a few hundred of 128k for random rows).
 *  - At the end the candidates are sorted (the power of two above their count) and K written.
 *  - Rows whose length or alignment does not allow float4 take the same rounds element by element.
 * Knobs: BLOCK (threads), UNROLL (float4 loads per thread per round). Shared memory:
 * CAP * 8 bytes, CAP = the power of two at least BLOCK * UNROLL * 4 + 64. */
/* kevo:launch
local per_round = BLOCK * UNROLL * 4
local cap = 1
while cap < per_round + 64 do cap = cap * 2 end
return {
  kernels = {
    {name = "topk", grid = {M}, block = {BLOCK}, shared = cap * 8,
     args = {"x", "values", "indices", i32(M), i32(V), i32(K), i32(cap)}},
  },
}
*/
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef UNROLL
#define UNROLL 2
#endif

typedef unsigned long long u64;

__device__ __forceinline__ u64 key_of(float v, unsigned idx) {
  unsigned u = __float_as_uint(v);
  u ^= (u & 0x80000000u) ? 0xffffffffu : 0x80000000u;
  return ((u64)u << 32) | (u64)(0xffffffffu - idx);
}
__device__ __forceinline__ float value_of(u64 key) {
  unsigned u = (unsigned)(key >> 32);
  u ^= (u & 0x80000000u) ? 0x80000000u : 0xffffffffu;
  return __uint_as_float(u);
}

__device__ __forceinline__ int pow2_at_least(int n) {
  int p = 2;
  while (p < n) p <<= 1;
  return p;
}

/* Sorts buf[0 .. cap) descending (cap a power of two); slots past n hold 0 (below every key). */
__device__ void sort_desc(u64* buf, int n, int cap) {
  for (int i = n + threadIdx.x; i < cap; i += BLOCK) buf[i] = 0;
  __syncthreads();
  for (int size = 2; size <= cap; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int i = threadIdx.x; i < cap / 2; i += BLOCK) {
        const int a = 2 * i - (i & (stride - 1)), b = a + stride;
        const bool desc = (a & size) == 0;
        const u64 x = buf[a], y = buf[b];
        if ((x < y) == desc) {
          buf[a] = y;
          buf[b] = x;
        }
      }
      __syncthreads();
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    topk(const float* __restrict__ x, float* __restrict__ values, long long* __restrict__ indices,
         int M, int V, int K, int cap) {
  extern __shared__ u64 buf[];
  __shared__ int count;
  __shared__ u64 thr_key;
  const int row = blockIdx.x, tid = threadIdx.x, lane = tid & 31;
  if (row >= M) return;
  const float* xr = x + (long long)row * V;
  const bool vec = V % 4 == 0 && ((unsigned long long)x & 15) == 0;
  if (tid == 0) {
    count = 0;
    thr_key = 0;
  }
  __syncthreads();
  float thr = -__int_as_float(0x7f800000);
  u64 tk = 0;
  const int per_round = BLOCK * UNROLL * 4;
  for (int base = 0; base < V; base += per_round) {
    if (count > cap - per_round) { /* the next round could overflow: keep the K best */
      sort_desc(buf, count, pow2_at_least(count));
      if (tid == 0) {
        count = K;
        thr_key = buf[K - 1];
      }
      __syncthreads();
    }
    float4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      const int e = base + (u * BLOCK + tid) * 4;
      if (vec && e + 3 < V) {
        v[u] = *reinterpret_cast<const float4*>(xr + e);
      } else {
        const float ninf = -__int_as_float(0x7f800000);
        v[u].x = e < V ? xr[e] : ninf;
        v[u].y = e + 1 < V ? xr[e + 1] : ninf;
        v[u].z = e + 2 < V ? xr[e + 2] : ninf;
        v[u].w = e + 3 < V ? xr[e + 3] : ninf;
      }
    }
    if (base == 0) {
      /* a first threshold: the K-th best of the threads' own maxima (K distinct elements are at
       * least that large, so it never exceeds the row's K-th best) */
      u64 mine = 0;
#pragma unroll
      for (int u = 0; u < UNROLL; u++) {
        const int e = base + (u * BLOCK + tid) * 4;
        const float f[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
        for (int q = 0; q < 4; q++)
          if (e + q < V) {
            const u64 k = key_of(f[q], (unsigned)(e + q));
            mine = k > mine ? k : mine;
          }
      }
      buf[tid] = mine;
      sort_desc(buf, BLOCK, BLOCK);
      if (tid == 0) thr_key = buf[K - 1];
      __syncthreads();
    }
    tk = thr_key;
    thr = tk ? value_of(tk) : -__int_as_float(0x7f800000);
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      const int e = base + (u * BLOCK + tid) * 4;
      const float f[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
      for (int q = 0; q < 4; q++) {
        /* the float compare rejects most elements, the key settles ties; keys are unique */
        bool take = e + q < V && f[q] >= thr;
        u64 key = 0;
        if (take) {
          key = key_of(f[q], (unsigned)(e + q));
          take = key >= tk;
        }
        const unsigned mask = __ballot_sync(0xffffffffu, take);
        if (mask) {
          int slot0 = 0;
          if (lane == __ffs(mask) - 1) slot0 = atomicAdd(&count, __popc(mask));
          slot0 = __shfl_sync(0xffffffffu, slot0, __ffs(mask) - 1);
          if (take) buf[slot0 + __popc(mask & ((1u << lane) - 1))] = key;
        }
      }
    }
    __syncthreads();
  }
  const int n = count;
  sort_desc(buf, n, pow2_at_least(n > K ? n : K));
  for (int i = tid; i < K; i += BLOCK) {
    const u64 key = buf[i];
    values[(long long)row * K + i] = value_of(key);
    indices[(long long)row * K + i] = (long long)(0xffffffffu - (unsigned)(key & 0xffffffffu));
  }
}
