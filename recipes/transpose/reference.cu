/* transpose reference: one thread per element, a coalesced read and a strided write, nothing
 * clever. */
/* kevo:launch
return {
  kernels = {
    {name = "transpose", grid = {cdiv(N, 32), cdiv(M, 8)}, block = {32, 8},
     args = {"x", "y", i32(M), i32(N)}},
  },
}
*/

extern "C" __global__ void transpose(const float* x, float* y, int M, int N) {
  const long long n = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long m = (long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (m < M && n < N) y[n * M + m] = x[m * N + n];
}
