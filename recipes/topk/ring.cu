/* topk seed: the row streamed through a ring of shared memory by asynchronous copies
 * (cp.async), so many bytes are in flight per warp without holding them in registers. (warp.cu
 * keeps the next batch in registers: 2 float4 per lane, 1 KB per warp, about 16 KB per SM with a
 * warp per row, is too little in flight for the DRAM's latency, and more spills.)
 *  - Every element has a unique 64-bit key: its value's bits made order-preserving (sign flip)
 *    above 0xffffffff - index (the lower index ranks higher among equal values).
 *  - SPLIT warps per row, each over a contiguous part of it; ROWS rows per block.
 *  - A batch is VEC float4 per lane (128 * VEC elements per warp); a warp keeps STAGES - 1
 *    batches in flight (16-byte cp.async.cg, L2 only) into its own ring slots and waits for the
 *    oldest. Each lane reads back only what it copied itself: no barrier, not even a warp's.
 *  - Threshold tk, a lower bound of the row's K-th best key: from the warp's first batch, the
 *    K-th best of the lanes' two best keys each (64 distinct elements, K <= 64). An element goes
 *    to the warp's candidate buffer in shared memory (CAP keys) only when its key reaches tk: one
 *    vote per batch when no lane has a value that high (most batches), then per float4 either a
 *    ballot per element (PUSH 0), one flag word per lane and three ballots (PUSH 1), or a value
 *    ballot per element first and the key's work only for elements some lane has (PUSH 2).
 *  - Before a push that would overflow the buffer, the warp sorts it (bitonic, __syncwarp only),
 *    keeps its K best and raises tk to the K-th: the buffer holds every element at or above tk.
 *    The warps of a row share their tk through shared memory (any warp's K-th best is a lower
 *    bound of the row's), read on the slow path.
 *  - At the end each warp sorts its candidates; with SPLIT > 1 the row's first warp sorts the
 *    warps' 64 best together. The first K are written.
 *  - Rows whose length or alignment does not allow 16-byte copies load element by element.
 * Knobs: ROWS (rows per block), SPLIT (warps per row: 1, 2 or 4), STAGES (ring slots per warp),
 * VEC (float4 per lane per batch), CAP (keys per warp), PF (L2 prefetch size of each copy: 0
 * none, 1 128 B, 2 256 B), PUSH (the slow path: 0 a ballot per element, 1 per float4, 2 a value
 * ballot first), MINB (blocks per SM the register count must allow; default: 16 warps). */
/* kevo:launch
return {
  kernels = {
    {name = "topk", grid = {cdiv(M, ROWS)}, block = {32 * ROWS * SPLIT},
     shared = ROWS * SPLIT * (STAGES * VEC * 512 + CAP * 8) + ROWS * 8,
     args = {"x", "values", "indices", i32(M), i32(V), i32(K)}},
  },
}
*/
#ifndef ROWS
#define ROWS 1
#endif
#ifndef SPLIT
#define SPLIT 1
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef CAP
#define CAP 256
#endif
#ifndef PF
#define PF 0
#endif
#ifndef PUSH
#define PUSH 2
#endif
/* blocks per SM the registers must allow: a warp per row wants 16 warps per SM (2048 rows on 132
 * SMs in one wave), i.e. at most 128 registers per thread */
#ifndef MINB
#define MINB (16 / (ROWS * SPLIT) > 0 ? 16 / (ROWS * SPLIT) : 1)
#endif
#if CAP < 128 || (CAP & (CAP - 1)) != 0
#error "CAP must be a power of two of at least 128 (K <= 64 kept, 32 pushed at once)"
#endif
#if PUSH == 1 && CAP < 256
#error "PUSH 1 pushes up to 128 keys at once: CAP must be at least 256"
#endif
#if SPLIT != 1 && SPLIT != 2 && SPLIT != 4
#error "SPLIT must be 1, 2 or 4"
#endif
#if CAP < 64 * SPLIT
#error "CAP must hold the 64 best of each of the row's warps (64 * SPLIT)"
#endif
#if STAGES < 2
#error "STAGES must be at least 2"
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
 * are first set to 0 (below every key). A stage's pairs are disjoint: each lane loads up to four
 * pairs before it stores any, so their shared-memory latencies overlap. */
__device__ __noinline__ void warp_sort_desc(u64* buf, int n, int size, int lane) {
  for (int i = n + lane; i < size; i += 32) buf[i] = 0;
  __syncwarp();
  const int half = size / 2;
  for (int w = 2; w <= size; w <<= 1)
    for (int stride = w >> 1; stride > 0; stride >>= 1) {
      for (int i0 = lane; i0 < half; i0 += 128) {
        u64 xa[4], xb[4];
        int ia[4];
#pragma unroll
        for (int q = 0; q < 4; q++) {
          const int i = i0 + 32 * q;
          ia[q] = 2 * i - (i & (stride - 1));
          if (i < half) {
            xa[q] = buf[ia[q]];
            xb[q] = buf[ia[q] + stride];
          }
        }
#pragma unroll
        for (int q = 0; q < 4; q++) {
          const bool desc = (ia[q] & w) == 0;
          if (i0 + 32 * q < half && (xa[q] < xb[q]) == desc) {
            buf[ia[q]] = xb[q];
            buf[ia[q] + stride] = xa[q];
          }
        }
      }
      __syncwarp();
    }
}

/* 16 bytes from global memory into this thread's shared slot, asynchronously (L2 only) */
__device__ __forceinline__ void copy16(float4* dst, const float* src) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
#if PF == 1
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
#elif PF == 2
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
#else
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
#endif
}
__device__ __forceinline__ void copy_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
/* waits until at most STAGES - 1 of this thread's groups are pending: the oldest has landed */
__device__ __forceinline__ void copy_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 1) : "memory");
}

struct batch_t {
  float4 v[VEC];
};

/* A warp's candidate state: buf (CAP keys in shared memory), count, tk and its value thr; rtk,
 * the row's threshold in shared memory, the best tk any warp of the row has published. */
struct cand_t {
  u64* buf;
  int count;
  u64 tk;
  float thr;
  u64* rtk;
};

/* Sorts the buffer's count keys and returns the new tk: the K-th best when there are K, tk
 * otherwise (warp-uniform). Out of line and by value: the hot loop keeps its state in registers. */
__device__ __noinline__ u64 tighten(u64* buf, int count, u64 tk, int K, int lane) {
  warp_sort_desc(buf, count, pow2_at_least(count), lane);
  const u64 kth = count >= K ? buf[K - 1] : 0;
  __syncwarp();
  return kth > tk ? kth : tk;
}

/* Raises tk to the row's threshold (one lane reads it: every lane must see the same value). */
__device__ __forceinline__ void adopt_row_tk(cand_t& c) {
#if SPLIT > 1
  const u64 s = __shfl_sync(0xffffffffu, *c.rtk, 0);
  if (s > c.tk) {
    c.tk = s;
    c.thr = thr_of(s);
  }
#endif
}
__device__ __forceinline__ void publish_tk(const cand_t& c, int lane) {
#if SPLIT > 1
  if (lane == 0) atomicMax(c.rtk, c.tk);
#endif
}

/* Makes room in the buffer: keeps the K best, raises tk (and shares it with the row's warps). */
__device__ __forceinline__ void make_room(cand_t& c, int K, int lane) {
  c.tk = tighten(c.buf, c.count, c.tk, K, lane);
  c.thr = thr_of(c.tk);
  if (c.count > K) c.count = K;
  publish_tk(c, lane);
  adopt_row_tk(c);
}

/* One element per lane (index e): pushed when its key reaches tk. Warp-uniform control. */
__device__ __forceinline__ void push_one(float f, int e, cand_t& c, int hi, int K, int lane) {
  bool take = e < hi && f >= c.thr;
  u64 key = 0;
  if (take) {
    key = key_of(f, (unsigned)e);
    take = key >= c.tk;
  }
  unsigned mask = __ballot_sync(0xffffffffu, take);
  if (!mask) return;
  if (c.count + __popc(mask) > CAP) {
    make_room(c, K, lane);
    take = take && key >= c.tk;
    mask = __ballot_sync(0xffffffffu, take);
  }
  if (take) c.buf[c.count + __popc(mask & ((1u << lane) - 1))] = key;
  c.count += __popc(mask);
}

/* Whether element i of value f has a key at or above tk: the float compare decides unless the
 * values are equal (then the index does; -0 and +0 too). */
__device__ __forceinline__ bool reaches(float f, int i, int hi, const cand_t& c) {
  return i < hi && (f > c.thr || (f == c.thr && key_of(f, (unsigned)i) >= c.tk));
}
/* The lane's flags for the four elements of f (bit j: element e + j reaches tk), and the warp's
 * count of them as three bit-planes of the lanes' counts (0 to 4). */
__device__ __forceinline__ unsigned flags4(float4 f, int e, int hi, const cand_t& c) {
  return (unsigned)reaches(f.x, e, hi, c) | (unsigned)reaches(f.y, e + 1, hi, c) << 1 |
         (unsigned)reaches(f.z, e + 2, hi, c) << 2 | (unsigned)reaches(f.w, e + 3, hi, c) << 3;
}
__device__ __forceinline__ int planes_count(unsigned p0, unsigned p1, unsigned p2) {
  return __popc(p0) + 2 * __popc(p1) + 4 * __popc(p2);
}

/* The four elements of f per lane (indices e .. e + 3) at once: one flag word per lane, the
 * lanes' slots from three ballots of their counts' bits (no per-element vote), at most 128 keys
 * per call (CAP >= K + 128 after making room). Warp-uniform control. */
__device__ __forceinline__ void push_four(float4 f, int e, cand_t& c, int hi, int K, int lane) {
  unsigned fl = flags4(f, e, hi, c), n = __popc(fl);
  unsigned p0 = __ballot_sync(0xffffffffu, n & 1), p1 = __ballot_sync(0xffffffffu, n & 2),
           p2 = __ballot_sync(0xffffffffu, n & 4);
  int total = planes_count(p0, p1, p2);
  if (!total) return;
  if (c.count + total > CAP) {
    make_room(c, K, lane);
    fl = flags4(f, e, hi, c);
    n = __popc(fl);
    p0 = __ballot_sync(0xffffffffu, n & 1);
    p1 = __ballot_sync(0xffffffffu, n & 2);
    p2 = __ballot_sync(0xffffffffu, n & 4);
    total = planes_count(p0, p1, p2);
  }
  const unsigned lt = (1u << lane) - 1;
  u64* out = c.buf + c.count + planes_count(p0 & lt, p1 & lt, p2 & lt);
  if (fl & 1) *out++ = key_of(f.x, (unsigned)e);
  if (fl & 2) *out++ = key_of(f.y, (unsigned)e + 1);
  if (fl & 4) *out++ = key_of(f.z, (unsigned)e + 2);
  if (fl & 8) *out = key_of(f.w, (unsigned)e + 3);
  c.count += total;
}

/* The slow path of a batch with a value at or above thr somewhere in the warp. */
__device__ __forceinline__ void push_batch(const batch_t& r, cand_t& c, int base, int hi, int K,
                                           int lane) {
  adopt_row_tk(c);
#pragma unroll
  for (int u = 0; u < VEC; u++) {
    const float4 f = r.v[u];
    const float mx = fmaxf(fmaxf(f.x, f.y), fmaxf(f.z, f.w));
    if (!__any_sync(0xffffffffu, mx >= c.thr)) continue;
    const int e = base + (u * 32 + lane) * 4;
#if PUSH == 1
    push_four(f, e, c, hi, K, lane);
#elif PUSH == 2
    if (__ballot_sync(0xffffffffu, f.x >= c.thr)) push_one(f.x, e, c, hi, K, lane);
    if (__ballot_sync(0xffffffffu, f.y >= c.thr)) push_one(f.y, e + 1, c, hi, K, lane);
    if (__ballot_sync(0xffffffffu, f.z >= c.thr)) push_one(f.z, e + 2, c, hi, K, lane);
    if (__ballot_sync(0xffffffffu, f.w >= c.thr)) push_one(f.w, e + 3, c, hi, K, lane);
#else
    push_one(f.x, e, c, hi, K, lane);
    push_one(f.y, e + 1, c, hi, K, lane);
    push_one(f.z, e + 2, c, hi, K, lane);
    push_one(f.w, e + 3, c, hi, K, lane);
#endif
  }
}

/* One vote for the whole batch; most batches of a random row end there. */
__device__ __forceinline__ void filter(const batch_t& r, cand_t& c, int base, int hi, int K,
                                       int lane) {
  float mx = fmaxf(fmaxf(r.v[0].x, r.v[0].y), fmaxf(r.v[0].z, r.v[0].w));
#pragma unroll
  for (int u = 1; u < VEC; u++)
    mx = fmaxf(mx, fmaxf(fmaxf(r.v[u].x, r.v[u].y), fmaxf(r.v[u].z, r.v[u].w)));
  if (__any_sync(0xffffffffu, mx >= c.thr)) push_batch(r, c, base, hi, K, lane);
}

/* b1 > b2: the lane's two best keys so far, given element e of value f */
__device__ __forceinline__ void best2(float f, int e, int hi, u64& b1, u64& b2) {
  if (e >= hi) return;
  const u64 k = key_of(f, (unsigned)e);
  if (k > b1) {
    b2 = b1;
    b1 = k;
  } else if (k > b2) {
    b2 = k;
  }
}

/* The first threshold, from the warp's first batch (elements from lo): the K-th best of the
 * lanes' two best keys; 0 (every key passes) when the batch has fewer than K elements. */
__device__ __forceinline__ void first_threshold(const batch_t& r, cand_t& c, int lo, int hi,
                                                int K, int lane) {
  u64 b1 = 0, b2 = 0;
#pragma unroll
  for (int u = 0; u < VEC; u++) {
    const int e = lo + (u * 32 + lane) * 4;
    best2(r.v[u].x, e, hi, b1, b2);
    best2(r.v[u].y, e + 1, hi, b1, b2);
    best2(r.v[u].z, e + 2, hi, b1, b2);
    best2(r.v[u].w, e + 3, hi, b1, b2);
  }
  c.buf[lane] = b1;
  c.buf[32 + lane] = b2;
  warp_sort_desc(c.buf, 64, 64, lane);
  c.tk = c.buf[K - 1];
  c.thr = thr_of(c.tk);
  __syncwarp();
  publish_tk(c, lane);
}

/* Elements [lo, hi) of a row that is 16-byte aligned with lo and hi multiples of 4: through the
 * ring. Lane's float4 u of batch b is elements lo + b * 128 * VEC + (u * 32 + lane) * 4 + 0..3,
 * in ring[(b % STAGES) * VEC * 32 + u * 32 + lane]; float4 past hi are not copied and read as
 * -inf. */
__device__ __forceinline__ void scan_ring(const float* xr, float4* ring, cand_t& c, int lo, int hi,
                                          int K, int lane) {
  const int step = VEC * 128, nb = (hi - lo + step - 1) / step;
  const float ninf = -__int_as_float(0x7f800000);
#pragma unroll
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < nb)
#pragma unroll
      for (int u = 0; u < VEC; u++) {
        const int e = lo + s * step + (u * 32 + lane) * 4;
        if (e < hi) copy16(ring + s * VEC * 32 + u * 32 + lane, xr + e);
      }
    copy_commit(); /* an empty group past the end keeps the count wait_group relies on */
  }
  int slot = 0, ahead = STAGES - 1; /* ring slot of batch b, and of batch b + STAGES - 1 */
  for (int b = 0; b < nb; b++) {
    const int bn = b + STAGES - 1, next = lo + bn * step;
    if (next + step <= hi) { /* a whole batch: no bounds to check (all but the last) */
#pragma unroll
      for (int u = 0; u < VEC; u++)
        copy16(ring + ahead * VEC * 32 + u * 32 + lane, xr + next + (u * 32 + lane) * 4);
    } else if (bn < nb) {
#pragma unroll
      for (int u = 0; u < VEC; u++) {
        const int e = next + (u * 32 + lane) * 4;
        if (e < hi) copy16(ring + ahead * VEC * 32 + u * 32 + lane, xr + e);
      }
    }
    copy_commit();
    copy_wait(); /* batch b has landed (this thread's part of it, all this thread reads) */
    const int base = lo + b * step;
    batch_t r;
    if (base + step <= hi) {
#pragma unroll
      for (int u = 0; u < VEC; u++) r.v[u] = ring[slot * VEC * 32 + u * 32 + lane];
    } else {
#pragma unroll
      for (int u = 0; u < VEC; u++) {
        const int e = base + (u * 32 + lane) * 4;
        r.v[u] = e < hi ? ring[slot * VEC * 32 + u * 32 + lane]
                        : make_float4(ninf, ninf, ninf, ninf);
      }
    }
    if (b == 0) first_threshold(r, c, lo, hi, K, lane);
    filter(r, c, base, hi, K, lane);
    slot = slot + 1 == STAGES ? 0 : slot + 1;
    ahead = ahead + 1 == STAGES ? 0 : ahead + 1;
  }
  asm volatile("cp.async.wait_all;" ::: "memory");
}

/* Elements [lo, hi) of any row: element by element, no copies in flight beyond the batch's. */
__device__ __forceinline__ void scan_plain(const float* xr, cand_t& c, int lo, int hi, int K,
                                           int lane) {
  const int step = VEC * 128;
  const float ninf = -__int_as_float(0x7f800000);
  for (int base = lo; base < hi; base += step) {
    batch_t r;
#pragma unroll
    for (int u = 0; u < VEC; u++) {
      const int e = base + (u * 32 + lane) * 4;
      r.v[u].x = e < hi ? xr[e] : ninf;
      r.v[u].y = e + 1 < hi ? xr[e + 1] : ninf;
      r.v[u].z = e + 2 < hi ? xr[e + 2] : ninf;
      r.v[u].w = e + 3 < hi ? xr[e + 3] : ninf;
    }
    if (base == lo) first_threshold(r, c, lo, hi, K, lane);
    filter(r, c, base, hi, K, lane);
  }
}

extern "C" __global__ void __launch_bounds__(32 * ROWS * SPLIT, MINB)
    topk(const float* __restrict__ x, float* __restrict__ values, long long* __restrict__ indices,
         int M, int V, int K) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int part = warp % SPLIT, row = blockIdx.x * ROWS + warp / SPLIT;
#if SPLIT == 1
  if (row >= M) return; /* whole warps leave: no block barrier below */
#endif
  float4* ring = reinterpret_cast<float4*>(smem) + warp * STAGES * VEC * 32;
  u64* bufs = reinterpret_cast<u64*>(smem + ROWS * SPLIT * STAGES * VEC * 512);
  u64* rtks = bufs + ROWS * SPLIT * CAP;
  cand_t c = {bufs + warp * CAP, 0, 0, -__int_as_float(0x7f800000), rtks + warp / SPLIT};
#if SPLIT > 1
  if (threadIdx.x < ROWS) rtks[threadIdx.x] = 0;
  __syncthreads();
#endif
  /* the warp's part of the row: [lo, hi), lo a multiple of 4 */
  const int chunk = ((V + SPLIT - 1) / SPLIT + 3) & ~3;
  const int lo = min(V, part * chunk), hi = min(V, lo + chunk);
  const float* xr = x + (long long)row * V;
  if (row < M) {
    if (V % 4 == 0 && ((unsigned long long)x & 15) == 0)
      scan_ring(xr, ring, c, lo, hi, K, lane);
    else
      scan_plain(xr, c, lo, hi, K, lane);
    /* sorted, the K best first; at least 64 slots valid (zeros past count) for the merge */
    warp_sort_desc(c.buf, c.count, pow2_at_least(c.count > 64 ? c.count : 64), lane);
  }
#if SPLIT > 1
  __syncthreads();
  if (row >= M || part != 0) return;
  /* the row's first warp: its 64 best, then each other warp's 64 best, sorted together */
  for (int i = lane; i < (SPLIT - 1) * 64; i += 32)
    c.buf[64 + i] = c.buf[(1 + i / 64) * CAP + i % 64];
  __syncwarp();
  warp_sort_desc(c.buf, SPLIT * 64, pow2_at_least(SPLIT * 64), lane);
#endif
  for (int i = lane; i < K; i += 32) {
    const u64 key = c.buf[i];
    values[(long long)row * K + i] = value_of(key);
    indices[(long long)row * K + i] = (long long)(0xffffffffu - (unsigned)(key & 0xffffffffu));
  }
}
