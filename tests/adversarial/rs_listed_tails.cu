// Class 2: right only on the listed shapes. Rows are read 4 floats at a time; the remainder
// N % 4 is handled by a switch written for the remainders the listed shapes have (0 and 1):
// a row length ending in 2 or 3 elements loses them. Held-out shapes have odd N, half of them
// N % 4 == 3: `wrong`.
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
  int body = N / 4 * 4;
  for (int j = lane * 4; j < body; j += 128) s += xr[j] + xr[j + 1] + xr[j + 2] + xr[j + 3];
  if (lane == 0 && N % 4 == 1) s += xr[N - 1]; // the listed remainders: 0 and 1
  for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
  if (lane == 0) y[row] = s;
}
