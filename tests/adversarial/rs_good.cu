// A correct row_sum: one warp per row, shuffle reduction. Listed before rs_memo.cu to show the
// row_sum contract itself is judged ok.
/* kevo:launch
return {kernels = {{name = "row_sum", grid = {cdiv(M, 8)}, block = {256},
                    args = {"x", "y", i32(M), i32(N)}}}}
*/
extern "C" __global__ void row_sum(const float* x, float* y, int M, int N) {
  const long long row = (long long)blockIdx.x * 8 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= M) return;
  const float* xr = x + row * N;
  float s = 0.0f;
  for (int j = lane; j < N; j += 32)
    s += xr[j];
  for (int off = 16; off > 0; off >>= 1)
    s += __shfl_xor_sync(0xffffffffu, s, off);
  if (lane == 0) y[row] = s;
}
