// Wrong on purpose: a leaky ReLU where the reference is a plain ReLU.
extern "C" __global__ void relu_kernel(const float *__restrict__ x, float *__restrict__ out,
                                       int batch_size, int dim) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (long long)batch_size * dim) out[i] = x[i] > 0.0f ? x[i] : 0.01f * x[i];
}
/* kevo:launch
return {kernels = {{name = "relu_kernel", grid = {cdiv(batch_size * dim, 256)}, block = {256},
                    args = {"x", "out", i32(batch_size), i32(dim)}}}}
*/
