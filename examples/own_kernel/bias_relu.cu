/* bias_relu: y[i, j] = max(x[i, j] + bias[j], 0) over a row-major M x N f32 matrix: the kind
 * of small fused kernel a project carries. One thread per element; BLOCK threads per block.
 * The block below says how it is launched; `kevo new` reads it, together with the signature
 * and the BLOCK knob, to make a recipe in which this kernel is both reference and seed. */
/* kevo:launch
return {
  kernels = {
    {name = "bias_relu", grid = {cdiv(M * N, BLOCK)}, block = {BLOCK},
     args = {"x", "bias", "y", i32(M), i32(N)}},
  },
}
*/

#ifndef BLOCK
#define BLOCK 256
#endif

extern "C" __global__ void bias_relu(const float* __restrict__ x,
                                     const float* __restrict__ bias, /* one value per column */
                                     float* __restrict__ y, int M, int N) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)M * N) return;
  const float v = x[i] + bias[i % N];
  y[i] = v > 0.0f ? v : 0.0f;
}
