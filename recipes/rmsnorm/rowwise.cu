/* rmsnorm seed: one block per row; the row is read from HBM once where it fits in registers.
 *  - One pass for the sum of squares (block reduction), the row kept in registers for the
 *    write; rows longer than BLOCK * CACHE_FLOATS read the rest again (from L2, mostly).
 *  - VEC-wide loads and stores (float2/float4) when the rows of x and y and weight are all
 *    VEC * 4-byte aligned; a scalar tail for N % VEC; a scalar row otherwise (a row of x starts
 *    aligned only when row * N is a multiple of VEC).
 *  - Block reduction: __shfl_xor_sync in each warp, then every warp folds the per-warp slots.
 * Knobs: BLOCK (threads per row, a multiple of 32, at most 1024), VEC (1, 2 or 4). */
/* kevo:launch
return {
  kernels = {
    {name = "rmsnorm", grid = {M}, block = {BLOCK}, shared = 0,
     args = {"x", "weight", "y", i32(M), i32(N)}},
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
#define EPS 1e-6f

template <int V>
struct __align__(4 * V) pack {
  float v[V];
};

/* The sum of v over the block, for every thread. red holds WARPS floats. */
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
  return t;
}

/* One row, V floats per access (the caller checked V-alignment of every pointer). */
template <int V>
__device__ __forceinline__ void norm_row(const float* __restrict__ xr, const float* __restrict__ w,
                                         float* __restrict__ yr, int N, float* red) {
  constexpr int CACHE = CACHE_FLOATS / V > 0 ? CACHE_FLOATS / V : 1;
  typedef pack<V> P;
  const int tid = threadIdx.x;
  const int nvec = N / V, tail = nvec * V;
  const P* xv = reinterpret_cast<const P*>(xr);
  P cache[CACHE];

  float q = 0.0f;
#pragma unroll
  for (int k = 0; k < CACHE; k++) {
    const int i = tid + k * BLOCK;
    if (i < nvec) {
      cache[k] = xv[i];
#pragma unroll
      for (int v = 0; v < V; v++)
        q = fmaf(cache[k].v[v], cache[k].v[v], q);
    }
  }
  for (int i = tid + CACHE * BLOCK; i < nvec; i += BLOCK) {
    const P p = xv[i];
#pragma unroll
    for (int v = 0; v < V; v++)
      q = fmaf(p.v[v], p.v[v], q);
  }
  for (int j = tail + tid; j < N; j += BLOCK)
    q = fmaf(xr[j], xr[j], q);
  const float rstd = rsqrtf(block_sum(q, red) / N + EPS);

  const P* wv = reinterpret_cast<const P*>(w);
  P* yv = reinterpret_cast<P*>(yr);
#pragma unroll
  for (int k = 0; k < CACHE; k++) {
    const int i = tid + k * BLOCK;
    if (i < nvec) {
      const P wp = wv[i];
      P out;
#pragma unroll
      for (int v = 0; v < V; v++)
        out.v[v] = cache[k].v[v] * rstd * wp.v[v];
      yv[i] = out;
    }
  }
  for (int i = tid + CACHE * BLOCK; i < nvec; i += BLOCK) {
    const P p = xv[i], wp = wv[i];
    P out;
#pragma unroll
    for (int v = 0; v < V; v++)
      out.v[v] = p.v[v] * rstd * wp.v[v];
    yv[i] = out;
  }
  for (int j = tail + tid; j < N; j += BLOCK)
    yr[j] = xr[j] * rstd * w[j];
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    rmsnorm(const float* __restrict__ x, const float* __restrict__ weight, float* __restrict__ y,
            int M, int N) {
  __shared__ float red[WARPS];
  const int row = blockIdx.x;
  if (row >= M) return;
  const float* xr = x + (long long)row * N;
  float* yr = y + (long long)row * N;
  const unsigned long long bits =
      (unsigned long long)xr | (unsigned long long)yr | (unsigned long long)weight;
  if (VEC > 1 && (bits & (4 * VEC - 1)) == 0)
    norm_row<VEC>(xr, weight, yr, N, red);
  else
    norm_row<1>(xr, weight, yr, N, red);
}
