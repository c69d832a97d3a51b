/* topk seed: a warp per row, no block-wide barrier; the row is read once with 16-byte loads,
 * the next batch in flight while this one is filtered.
 *  - Every element has a unique 64-bit key: its value's bits made order-preserving (sign flip)
 *    above 0xffffffff - index (the lower index ranks higher among equal values).
 *  - A lane loads UNROLL float4 per batch (a warp: 128 * UNROLL elements) and issues the next
 *    batch's loads before it filters this one.
 *  - Threshold tk, a lower bound of the row's K-th best key: from the first batch, the K-th best
 *    of the lanes' two best keys each (64 distinct elements, K <= 64). An element goes to the
 *    warp's candidate buffer in shared memory (CAP keys) only when its value reaches tk's value
 *    (one float compare for most elements) and its key reaches tk; slots from a ballot.
 *  - Before a push that would overflow the buffer, the warp sorts it (bitonic, __syncwarp only),
 *    keeps its K best and raises tk to the K-th: the buffer holds every element at or above tk.
 *    For random rows a few hundred elements of 128k pass, so this is rare.
 *  - At the end the candidates are sorted and the first K written.
 *  - Rows whose length or alignment does not allow float4 load element by element.
 * Knobs: WARPS (rows per block), UNROLL (float4 loads per lane per batch), CAP (keys per warp),
 * LD (the loads' cache hint: 0 read-only path, 1 streaming, 2 no L1 allocation). */
/* kevo:launch
return {
  kernels = {
    {name = "topk", grid = {cdiv(M, WARPS)}, block = {32 * WARPS}, shared = 0,
     args = {"x", "values", "indices", i32(M), i32(V), i32(K)}},
  },
}
*/
#ifndef WARPS
#define WARPS 4
#endif
#ifndef UNROLL
#define UNROLL 2
#endif
#ifndef CAP
#define CAP 256
#endif
#ifndef LD
#define LD 0
#endif
#if CAP < 128 || (CAP & (CAP - 1)) != 0
#error "CAP must be a power of two of at least 128 (K <= 64 kept, 32 pushed at once)"
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
/* The float threshold of key tk: every element of a key >= tk has a value >= it (0: -inf). */
__device__ __forceinline__ float thr_of(u64 tk) {
  return tk ? value_of(tk) : -__int_as_float(0x7f800000);
}
__device__ __forceinline__ int pow2_at_least(int n) {
  int p = 32;
  while (p < n) p <<= 1;
  return p;
}

/* Sorts buf[0 .. size) descending within one warp (size a power of two >= 32); slots from n on
 * are first set to 0 (below every key). */
__device__ void warp_sort_desc(u64* buf, int n, int size, int lane) {
  for (int i = n + lane; i < size; i += 32) buf[i] = 0;
  __syncwarp();
  for (int w = 2; w <= size; w <<= 1)
    for (int stride = w >> 1; stride > 0; stride >>= 1) {
      for (int i = lane; i < size / 2; i += 32) {
        const int a = 2 * i - (i & (stride - 1)), b = a + stride;
        const bool desc = (a & w) == 0;
        const u64 x = buf[a], y = buf[b];
        if ((x < y) == desc) {
          buf[a] = y;
          buf[b] = x;
        }
      }
      __syncwarp();
    }
}

/* 16 bytes of the row: LD 0 through the read-only cache, 1 streaming (evict first), 2 with no
 * L1 allocation */
__device__ __forceinline__ float4 load4(const float4* p) {
#if LD == 1
  return __ldcs(p);
#elif LD == 2
  float4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p));
  return v;
#else
  return __ldg(p);
#endif
}

struct batch_t {
  float4 v[UNROLL];
};

__device__ __forceinline__ void load_batch(batch_t& r, const float* xr, int base, int V, bool vec,
                                           int lane) {
  const float ninf = -__int_as_float(0x7f800000);
#pragma unroll
  for (int u = 0; u < UNROLL; u++) {
    const int e = base + (u * 32 + lane) * 4;
    if (vec && e + 3 < V) {
      r.v[u] = load4(reinterpret_cast<const float4*>(xr + e));
    } else {
      r.v[u].x = e < V ? xr[e] : ninf;
      r.v[u].y = e + 1 < V ? xr[e + 1] : ninf;
      r.v[u].z = e + 2 < V ? xr[e + 2] : ninf;
      r.v[u].w = e + 3 < V ? xr[e + 3] : ninf;
    }
  }
}

/* The warp's candidate state: buf (CAP keys in shared memory), count, tk and its value thr. */
struct cand_t {
  u64* buf;
  int count;
  u64 tk;
  float thr;
};

/* Sorts the buffer, keeps the K best, raises tk to the K-th (warp-uniform). */
__device__ __forceinline__ void tighten(cand_t& c, int K, int lane) {
  warp_sort_desc(c.buf, c.count, pow2_at_least(c.count), lane);
  if (c.count >= K) {
    const u64 kth = c.buf[K - 1];
    if (kth > c.tk) c.tk = kth;
    c.count = K;
  }
  c.thr = thr_of(c.tk);
  __syncwarp();
}

/* One element per lane (index e): pushed when its key reaches tk. Warp-uniform control. */
__device__ __forceinline__ void push_one(float f, int e, cand_t& c, int V, int K, int lane) {
  bool take = e < V && f >= c.thr;
  u64 key = 0;
  if (take) {
    key = key_of(f, (unsigned)e);
    take = key >= c.tk;
  }
  unsigned mask = __ballot_sync(0xffffffffu, take);
  if (!mask) return;
  if (c.count + __popc(mask) > CAP) { /* make room: keep the K best, raise tk */
    tighten(c, K, lane);
    take = take && key >= c.tk;
    mask = __ballot_sync(0xffffffffu, take);
  }
  if (take) c.buf[c.count + __popc(mask & ((1u << lane) - 1))] = key;
  c.count += __popc(mask);
}

/* The four components one at a time, by name: an array indexed in a loop the compiler does not
 * unroll would live in local memory. */
__device__ __forceinline__ void filter(const batch_t& r, cand_t& c, int base, int V, int K,
                                       int lane) {
#pragma unroll
  for (int u = 0; u < UNROLL; u++) {
    const float4 f = r.v[u];
    const float mx = fmaxf(fmaxf(f.x, f.y), fmaxf(f.z, f.w));
    if (!__any_sync(0xffffffffu, mx >= c.thr)) continue; /* most batches of a random row */
    const int e = base + (u * 32 + lane) * 4;
    push_one(f.x, e, c, V, K, lane);
    push_one(f.y, e + 1, c, V, K, lane);
    push_one(f.z, e + 2, c, V, K, lane);
    push_one(f.w, e + 3, c, V, K, lane);
  }
}

/* b1 > b2: the lane's two best keys so far, given element e of value f */
__device__ __forceinline__ void best2(float f, int e, int V, u64& b1, u64& b2) {
  if (e >= V) return;
  const u64 k = key_of(f, (unsigned)e);
  if (k > b1) {
    b2 = b1;
    b1 = k;
  } else if (k > b2) {
    b2 = k;
  }
}

extern "C" __global__ void __launch_bounds__(32 * WARPS)
    topk(const float* __restrict__ x, float* __restrict__ values, long long* __restrict__ indices,
         int M, int V, int K) {
  __shared__ u64 bufs[WARPS][CAP];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int row = blockIdx.x * WARPS + warp;
  if (row >= M) return; /* whole warps leave: no block barrier below */
  const float* xr = x + (long long)row * V;
  const bool vec = V % 4 == 0 && ((unsigned long long)x & 15) == 0;
  const int step = UNROLL * 128;
  cand_t c = {bufs[warp], 0, 0, -__int_as_float(0x7f800000)};

  batch_t cur, nxt;
  load_batch(cur, xr, 0, V, vec, lane);
  /* the first threshold: the K-th best of the lanes' two best keys of the first batch */
  {
    u64 b1 = 0, b2 = 0;
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      const int e = (u * 32 + lane) * 4;
      best2(cur.v[u].x, e, V, b1, b2);
      best2(cur.v[u].y, e + 1, V, b1, b2);
      best2(cur.v[u].z, e + 2, V, b1, b2);
      best2(cur.v[u].w, e + 3, V, b1, b2);
    }
    c.buf[lane] = b1;
    c.buf[32 + lane] = b2;
    warp_sort_desc(c.buf, 64, 64, lane);
    c.tk = c.buf[K - 1]; /* 0 (every key passes) when the batch has fewer than K elements */
    c.thr = thr_of(c.tk);
    __syncwarp();
  }
  for (int base = 0; base < V; base += step) {
    if (base + step < V) load_batch(nxt, xr, base + step, V, vec, lane);
    filter(cur, c, base, V, K, lane);
    cur = nxt;
  }
  warp_sort_desc(c.buf, c.count, pow2_at_least(c.count > K ? c.count : K), lane);
  for (int i = lane; i < K; i += 32) {
    const u64 key = c.buf[i];
    values[(long long)row * K + i] = value_of(key);
    indices[(long long)row * K + i] = (long long)(0xffffffffu - (unsigned)(key & 0xffffffffu));
  }
}
