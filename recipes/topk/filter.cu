/* topk seed: the K largest of each row, sorted, ties to the lower index, one block per row.
 *  - Every element has a unique 64-bit key: its value's bits made order-preserving (sign flip)
 *    above 0xffffffff - index (the lower index ranks higher among equal values).
 *  - The row is streamed once, in rounds of BLOCK * UNROLL float4 loads (all issued before any
 *    use). An element joins a shared candidate buffer only when its key reaches the threshold
 *    tk, a lower bound of the row's K-th best key (a float compare first, the full key only
 *    then); slots come from one atomicAdd per warp (ballot + popc).
 *  - Thresholds: in the first round, the K-th best of the threads' own maxima (K distinct
 *    elements are at least that large), which also bounds that round's candidates by
 *    K * UNROLL * 4; whenever the buffer is over half full at a round's start, it is sorted
 *    (bitonic, in shared memory), cut to its K best, and tk rises to the K-th.
 *  - A round that overflows the buffer (rare: adversarial rows) drops its candidates, compacts,
 *    raises tk by its own threads' maxima and pushes again from registers (bounded as above).
 *  - At the end the candidates are sorted (the power of two above their count), K written.
 *  - Rows whose length or alignment does not allow float4 take the same rounds element by element.
 * Knobs: BLOCK (threads, a power of two, 128 to 1024), UNROLL (float4 loads per thread per round).
 * Shared memory: CAP = max(2048, 512 * UNROLL) keys of 8 bytes. */
/* kevo:launch
return {
  kernels = {
    {name = "topk", grid = {M}, block = {BLOCK}, shared = 0,
     args = {"x", "values", "indices", i32(M), i32(V), i32(K)}},
  },
}
*/
#ifndef BLOCK
#define BLOCK 512
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#define CAP (512 * UNROLL > 2048 ? 512 * UNROLL : 2048)
#if BLOCK > 1024 || BLOCK < 128 || (BLOCK & (BLOCK - 1)) != 0
#error "BLOCK must be a power of two from 128 to 1024"
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

/* Sorts buf[0 .. size) descending (size a power of two); slots from n on are first set to 0
 * (below every key). Starts and ends with __syncthreads. */
__device__ void sort_desc(u64* buf, int n, int size) {
  for (int i = n + threadIdx.x; i < size; i += BLOCK) buf[i] = 0;
  __syncthreads();
  for (int w = 2; w <= size; w <<= 1)
    for (int stride = w >> 1; stride > 0; stride >>= 1) {
      for (int i = threadIdx.x; i < size / 2; i += BLOCK) {
        const int a = 2 * i - (i & (stride - 1)), b = a + stride;
        const bool desc = (a & w) == 0;
        const u64 x = buf[a], y = buf[b];
        if ((x < y) == desc) {
          buf[a] = y;
          buf[b] = x;
        }
      }
      __syncthreads();
    }
}

struct round_t {
  float4 v[UNROLL];
};

/* tk = max(tk, the K-th best of this round's per-thread maximum keys), sorted in region. */
__device__ void raise_by_maxima(const round_t& r, int base, int V, int K, u64* region,
                                u64* thr_key) {
  u64 mine = 0;
#pragma unroll
  for (int u = 0; u < UNROLL; u++) {
    const int e = base + (u * BLOCK + threadIdx.x) * 4;
    const float f[4] = {r.v[u].x, r.v[u].y, r.v[u].z, r.v[u].w};
#pragma unroll
    for (int q = 0; q < 4; q++)
      if (e + q < V) {
        const u64 k = key_of(f[q], (unsigned)(e + q));
        mine = k > mine ? k : mine;
      }
  }
  region[threadIdx.x] = mine;
  sort_desc(region, BLOCK, BLOCK);
  if (threadIdx.x == 0 && region[K - 1] > *thr_key) *thr_key = region[K - 1];
  __syncthreads();
}

/* Pushes this round's elements whose key reaches tk; a slot past CAP sets *overflow. */
__device__ __forceinline__ void push(const round_t& r, int base, int V, u64 tk, u64* buf,
                                     int* count, int* overflow) {
  const int lane = threadIdx.x & 31;
  const float thr = tk ? value_of(tk) : -__int_as_float(0x7f800000);
#pragma unroll
  for (int u = 0; u < UNROLL; u++) {
    const int e = base + (u * BLOCK + threadIdx.x) * 4;
    const float f[4] = {r.v[u].x, r.v[u].y, r.v[u].z, r.v[u].w};
#pragma unroll
    for (int q = 0; q < 4; q++) {
      bool take = e + q < V && f[q] >= thr; /* most elements stop at this compare */
      u64 key = 0;
      if (take) {
        key = key_of(f[q], (unsigned)(e + q));
        take = key >= tk;
      }
      const unsigned mask = __ballot_sync(0xffffffffu, take);
      if (mask) {
        const int leader = __ffs(mask) - 1;
        int slot = 0;
        if (lane == leader) slot = atomicAdd(count, __popc(mask));
        slot = __shfl_sync(0xffffffffu, slot, leader) + __popc(mask & ((1u << lane) - 1));
        if (take) {
          if (slot < CAP)
            buf[slot] = key;
          else
            *overflow = 1;
        }
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    topk(const float* __restrict__ x, float* __restrict__ values, long long* __restrict__ indices,
         int M, int V, int K) {
  __shared__ u64 buf[CAP];
  __shared__ int count, overflow;
  __shared__ u64 thr_key;
  const int row = blockIdx.x, tid = threadIdx.x;
  if (row >= M) return;
  const float* xr = x + (long long)row * V;
  const bool vec = V % 4 == 0 && ((unsigned long long)x & 15) == 0;
  if (tid == 0) {
    count = 0;
    overflow = 0;
    thr_key = 0;
  }
  __syncthreads();
  const int per_round = BLOCK * UNROLL * 4;
  for (int base = 0; base < V; base += per_round) {
    int before = count;
    if (before > CAP / 2) { /* keep the K best: the threshold rises */
      sort_desc(buf, before, pow2_at_least(before));
      if (tid == 0) {
        count = K;
        thr_key = buf[K - 1];
      }
      __syncthreads();
      before = K;
    }
    round_t r;
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      const int e = base + (u * BLOCK + tid) * 4;
      if (vec && e + 3 < V) {
        r.v[u] = *reinterpret_cast<const float4*>(xr + e);
      } else {
        const float ninf = -__int_as_float(0x7f800000);
        r.v[u].x = e < V ? xr[e] : ninf;
        r.v[u].y = e + 1 < V ? xr[e + 1] : ninf;
        r.v[u].z = e + 2 < V ? xr[e + 2] : ninf;
        r.v[u].w = e + 3 < V ? xr[e + 3] : ninf;
      }
    }
    if (base == 0) raise_by_maxima(r, base, V, K, buf + CAP - BLOCK, &thr_key);
    push(r, base, V, thr_key, buf, &count, &overflow);
    __syncthreads();
    const int ovf = overflow;
    __syncthreads();
    if (ovf) { /* drop the round's candidates, compact, raise tk, push again */
      if (tid == 0) {
        count = before;
        overflow = 0;
      }
      __syncthreads();
      if (before > K) {
        sort_desc(buf, before, pow2_at_least(before));
        if (tid == 0) {
          count = K;
          thr_key = buf[K - 1];
        }
        __syncthreads();
      }
      raise_by_maxima(r, base, V, K, buf + CAP - BLOCK, &thr_key);
      push(r, base, V, thr_key, buf, &count, &overflow); /* at most K * UNROLL * 4 more */
      __syncthreads();
    }
  }
  const int n = count;
  sort_desc(buf, n, pow2_at_least(n > K ? n : K));
  for (int i = tid; i < K; i += BLOCK) {
    const u64 key = buf[i];
    values[(long long)row * K + i] = value_of(key);
    indices[(long long)row * K + i] = (long long)(0xffffffffu - (unsigned)(key & 0xffffffffu));
  }
}
