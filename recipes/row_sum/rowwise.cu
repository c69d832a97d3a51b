/* row_sum seed: ROW_WARPS warps per row, ROWS rows per block.
 *  - Each row is read as float4 after a scalar head up to its first 16-byte boundary (a row
 *    starts aligned only when row * N is a multiple of 4), then a scalar tail; UNROLL float4
 *    loads are in flight per thread, with streaming hints (x is read once).
 *  - Warp reduction with __shfl_xor_sync, then one shared slot per warp of the row; the
 *    summation order is fixed, so every run gives the same bits.
 * Knobs: ROW_WARPS (warps per row), ROWS (rows per block), UNROLL (float4 loads in flight). */
/* kevo:launch
return {
  kernels = {
    {name = "row_sum", grid = {cdiv(M, ROWS)}, block = {32 * ROW_WARPS * ROWS}, shared = 0,
     args = {"x", "y", i32(M), i32(N)}},
  },
}
*/

#ifndef ROW_WARPS
#define ROW_WARPS 4
#endif
#ifndef ROWS
#define ROWS 1
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#define ROW_THREADS (32 * ROW_WARPS)
#define BLOCK (ROW_THREADS * ROWS)
#if BLOCK > 1024
#error "32 * ROW_WARPS * ROWS must be at most 1024"
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
    row_sum(const float* __restrict__ x, float* __restrict__ y, int M, int N) {
  __shared__ float red[ROWS][ROW_WARPS];
  const int r = threadIdx.x / ROW_THREADS, t = threadIdx.x % ROW_THREADS;
  const int lane = t & 31, warp = t >> 5;
  const long long row = (long long)blockIdx.x * ROWS + r;
  float s = 0.0f;
  if (row < M) {
    const float* xr = x + row * N;
    const unsigned long long xa = (unsigned long long)xr;
    int head = (xa & 3) ? N : (int)((16 - (xa & 15)) & 15) / 4;
    if (head > N) head = N;
    const int nvec = (N - head) / 4;
    const float4* xv = reinterpret_cast<const float4*>(xr + head);
    for (int j = t; j < head; j += ROW_THREADS)
      s += xr[j];
    for (int base = t; base < nvec; base += ROW_THREADS * UNROLL) {
      float4 v[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; u++) {
        const int i = base + u * ROW_THREADS;
        v[u] = i < nvec ? __ldcs(xv + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      }
#pragma unroll
      for (int u = 0; u < UNROLL; u++)
        s += (v[u].x + v[u].y) + (v[u].z + v[u].w);
    }
    for (int j = head + nvec * 4 + t; j < N; j += ROW_THREADS)
      s += xr[j];
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1)
    s += __shfl_xor_sync(0xffffffffu, s, off);
  if (ROW_WARPS > 1) {
    if (lane == 0) red[r][warp] = s;
    __syncthreads();
    if (t == 0) {
      s = 0.0f;
#pragma unroll
      for (int w = 0; w < ROW_WARPS; w++)
        s += red[r][w];
    }
  }
  if (t == 0 && row < M) y[row] = s;
}
