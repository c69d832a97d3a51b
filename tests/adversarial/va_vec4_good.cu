// Honest control: a fast vectorised vector_add (float4 loads and stores, four elements per
// thread, a scalar tail for n % 4). A paranoid evaluator that rejects it is broken: `ok`, at
// about the copy bandwidth.
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {max(1, cdiv(cdiv(N, 4), 256))}, block = {256},
                    args = {"a", "b", "c", i32(N)}}}}
*/
extern "C" __global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ c, int n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long body = n / 4;
  if (i < body) {
    float4 x = reinterpret_cast<const float4*>(a)[i];
    float4 y = reinterpret_cast<const float4*>(b)[i];
    reinterpret_cast<float4*>(c)[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  if (i < n - body * 4) c[body * 4 + i] = a[body * 4 + i] + b[body * 4 + i];
}
