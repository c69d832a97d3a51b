/* transpose seed: a TILE x TILE tile through shared memory, so that both the read of x and the
 * write of y are coalesced; the tile's rows are padded by one float so the transposed read
 * of a column is free of bank conflicts. A block of TILE x BLOCK_ROWS threads moves the tile in
 * TILE / BLOCK_ROWS steps. Edge tiles are guarded (any M and N); offsets are 64-bit.
 * Knobs: TILE (32 or 64), BLOCK_ROWS (threads per tile column; divides TILE). */
/* kevo:launch
return {
  kernels = {
    {name = "transpose", grid = {cdiv(N, TILE), cdiv(M, TILE)}, block = {TILE, BLOCK_ROWS},
     shared = 0, args = {"x", "y", i32(M), i32(N)}},
  },
}
*/

#ifndef TILE
#define TILE 32
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
#endif
#if TILE % BLOCK_ROWS != 0 || TILE * BLOCK_ROWS > 1024
#error "BLOCK_ROWS must divide TILE, and TILE * BLOCK_ROWS be at most 1024"
#endif

extern "C" __global__ void __launch_bounds__(TILE * BLOCK_ROWS)
    transpose(const float* __restrict__ x, float* __restrict__ y, int M, int N) {
  __shared__ float tile[TILE][TILE + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const long long n0 = (long long)blockIdx.x * TILE, m0 = (long long)blockIdx.y * TILE;

  /* read: row m0 + r of x, columns n0 .. n0 + TILE - 1 (consecutive threads, coalesced) */
  const long long n = n0 + tx;
#pragma unroll
  for (int r = ty; r < TILE; r += BLOCK_ROWS) {
    const long long m = m0 + r;
    if (m < M && n < N) tile[r][tx] = __ldcs(x + m * N + n);
  }
  __syncthreads();
  /* write: row n0 + r of y, columns m0 .. m0 + TILE - 1, from column r of the tile */
  const long long m = m0 + tx;
#pragma unroll
  for (int r = ty; r < TILE; r += BLOCK_ROWS) {
    const long long nn = n0 + r;
    if (nn < N && m < M) __stcs(y + nn * M + m, tile[tx][r]);
  }
}
