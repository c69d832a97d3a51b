// Class 8: reading past the end of an input and being right only because the padding is zero.
// Rows are summed 4 floats at a time; other rows mask their tail, but the last row reads on to
// a 16-byte boundary, up to 3 floats past the end of x ("the allocation is padded with zeros
// anyway"). The worker pads inputs with NaN: `wrong` wherever N is not a multiple of 4.
/* kevo:launch
return {kernels = {{name = "row_sum", grid = {cdiv(M, 8)}, block = {256},
                    args = {"x", "y", i32(M), i32(N)}}}}
*/
extern "C" __global__ void row_sum(const float* x, float* y, int M, int N) {
  const long long row = (long long)blockIdx.x * 8 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= M) return;
  const float* xr = x + row * N;
  bool last = row == M - 1;
  float s = 0.0f;
  for (int j = lane * 4; j < N; j += 128)
    for (int k = 0; k < 4; k++)
      if (last || j + k < N) s += xr[j + k];
  for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
  if (lane == 0) y[row] = s;
}
