// The contract `kevo import tests/kbench/relu.py` writes: inputs, outputs, then sizes.
extern "C" __global__ void relu_kernel(const float *__restrict__ x, float *__restrict__ out,
                                       int batch_size, int dim) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (long long)batch_size * dim) out[i] = fmaxf(x[i], 0.0f);
}
/* kevo:launch
return {kernels = {{name = "relu_kernel", grid = {cdiv(batch_size * dim, 256)}, block = {256},
                    args = {"x", "out", i32(batch_size), i32(dim)}}}}
*/
