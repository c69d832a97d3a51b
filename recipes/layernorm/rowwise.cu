/* layernorm seed: one block per row; the row is read from HBM once where it fits in registers.
 *  - Exact two-pass statistics on the cached row: the mean (block reduction), then the sum of
 *    squared deviations (a second block reduction over registers, not memory).
 *  - Rows longer than BLOCK * CACHE_FLOATS keep their first part in registers and read the
 *    rest again (from L2, mostly) in the later passes.
 *  - VEC-wide loads and stores (float2/float4) when the rows of x and y, weight and bias are
 *    all VEC * 4-byte aligned; a scalar tail for N % VEC; a scalar row otherwise (a row of x
 *    starts aligned only when row * N is a multiple of VEC).
 *  - Block reductions: __shfl_xor_sync in each warp, then every warp folds the per-warp slots.
 * Knobs: BLOCK (threads per row, a multiple of 32, at most 1024), VEC (1, 2 or 4). */
/* kevo:launch
return {
  kernels = {
    {name = "layernorm", grid = {M}, block = {BLOCK}, shared = 0,
     args = {"x", "weight", "bias", "y", i32(M), i32(N)}},
  },
}
*/

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif
#if VEC != 1 && VEC != 2 && VEC != 4
#error "VEC must be 1, 2 or 4"
#endif
#if BLOCK % 32 != 0 || BLOCK < 32 || BLOCK > 1024
#error "BLOCK must be a multiple of 32 between 32 and 1024"
#endif
/* floats of the row each thread keeps in registers between the passes: rows of 8192 fit at
 * BLOCK >= 256 (fewer at large BLOCK, where __launch_bounds__ leaves fewer registers) */
#ifndef CACHE_FLOATS
#define CACHE_FLOATS (BLOCK >= 1024 ? 8 : BLOCK >= 512 ? 16 : 32)
#endif
#define WARPS (BLOCK / 32)
#define EPS 1e-5f

template <int V>
struct __align__(4 * V) pack {
  float v[V];
};

/* The sum of v over the block, for every thread. red holds WARPS floats; it may be reused as
 * soon as this returns. */
__device__ __forceinline__ float block_sum(float v, float* red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, off);
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float t = lane < WARPS ? red[lane] : 0.0f;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1)
    t += __shfl_xor_sync(0xffffffffu, t, off);
  __syncthreads();
  return t;
}

/* One row, V floats per access (the caller checked V-alignment of every pointer). */
template <int V>
__device__ __forceinline__ void norm_row(const float* __restrict__ xr, const float* __restrict__ w,
                                         const float* __restrict__ b, float* __restrict__ yr,
                                         int N, float* red) {
  constexpr int CACHE = CACHE_FLOATS / V > 0 ? CACHE_FLOATS / V : 1;
  typedef pack<V> P;
  const int tid = threadIdx.x;
  const int nvec = N / V, tail = nvec * V;
  const P* xv = reinterpret_cast<const P*>(xr);
  P cache[CACHE];

  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < CACHE; k++) {
    const int i = tid + k * BLOCK;
    if (i < nvec) {
      cache[k] = xv[i];
#pragma unroll
      for (int v = 0; v < V; v++)
        s += cache[k].v[v];
    }
  }
  for (int i = tid + CACHE * BLOCK; i < nvec; i += BLOCK) {
    const P p = xv[i];
#pragma unroll
    for (int v = 0; v < V; v++)
      s += p.v[v];
  }
  for (int j = tail + tid; j < N; j += BLOCK)
    s += xr[j];
  const float mean = block_sum(s, red) / N;

  float q = 0.0f;
#pragma unroll
  for (int k = 0; k < CACHE; k++) {
    const int i = tid + k * BLOCK;
    if (i < nvec) {
#pragma unroll
      for (int v = 0; v < V; v++) {
        const float d = cache[k].v[v] - mean;
        q = fmaf(d, d, q);
      }
    }
  }
  for (int i = tid + CACHE * BLOCK; i < nvec; i += BLOCK) {
    const P p = xv[i];
#pragma unroll
    for (int v = 0; v < V; v++) {
      const float d = p.v[v] - mean;
      q = fmaf(d, d, q);
    }
  }
  for (int j = tail + tid; j < N; j += BLOCK) {
    const float d = xr[j] - mean;
    q = fmaf(d, d, q);
  }
  const float rstd = rsqrtf(block_sum(q, red) / N + EPS);

  const P* wv = reinterpret_cast<const P*>(w);
  const P* bv = reinterpret_cast<const P*>(b);
  P* yv = reinterpret_cast<P*>(yr);
#pragma unroll
  for (int k = 0; k < CACHE; k++) {
    const int i = tid + k * BLOCK;
    if (i < nvec) {
      const P wp = wv[i], bp = bv[i];
      P out;
#pragma unroll
      for (int v = 0; v < V; v++)
        out.v[v] = fmaf((cache[k].v[v] - mean) * rstd, wp.v[v], bp.v[v]);
      yv[i] = out;
    }
  }
  for (int i = tid + CACHE * BLOCK; i < nvec; i += BLOCK) {
    const P p = xv[i], wp = wv[i], bp = bv[i];
    P out;
#pragma unroll
    for (int v = 0; v < V; v++)
      out.v[v] = fmaf((p.v[v] - mean) * rstd, wp.v[v], bp.v[v]);
    yv[i] = out;
  }
  for (int j = tail + tid; j < N; j += BLOCK)
    yr[j] = fmaf((xr[j] - mean) * rstd, w[j], b[j]);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    layernorm(const float* __restrict__ x, const float* __restrict__ weight,
              const float* __restrict__ bias, float* __restrict__ y, int M, int N) {
  __shared__ float red[WARPS];
  const int row = blockIdx.x;
  if (row >= M) return;
  const float* xr = x + (long long)row * N;
  float* yr = y + (long long)row * N;
  const unsigned long long bits = (unsigned long long)xr | (unsigned long long)yr |
                                  (unsigned long long)weight | (unsigned long long)bias;
  if (VEC > 1 && (bits & (4 * VEC - 1)) == 0)
    norm_row<VEC>(xr, weight, bias, yr, N, red);
  else
    norm_row<1>(xr, weight, bias, yr, N, red);
}
