// out[b, 0, c] = sum over r of x[b, r, c]; one thread per (b, c), rows in order.
extern "C" __global__ void sum_dim_kernel(const float *__restrict__ x, float *__restrict__ out,
                                          int batch_size, int rows, int cols) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)batch_size * cols) return;
  long long b = i / cols, c = i % cols;
  const float *p = x + b * (long long)rows * cols + c;
  float acc = 0.0f;
  for (int r = 0; r < rows; r++) acc += p[(long long)r * cols];
  out[i] = acc;
}
/* kevo:launch
return {kernels = {{name = "sum_dim_kernel", grid = {cdiv(batch_size * cols, 256)}, block = {256},
                    args = {"x", "out", i32(batch_size), i32(rows), i32(cols)}}}}
*/
