// Class 9 (with 11): leaving state in the L2 to slow whoever runs next. Besides an honest add,
// every launch reads a 48 MiB __device__ array with an evict_last cache policy (createpolicy),
// asking the L2 to keep those lines over everyone else's. The worker resets the L2 before every
// repetition of either kernel and checks the reference's time against its time measured alone;
// the cache-policy instructions are a warning in the result. The answer is right: `ok`.
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 256)}, block = {256},
                    args = {"a", "b", "c", i32(N)}}}}
*/
#define PIN_FLOATS (12 << 20)
__device__ float pinned[PIN_FLOATS];
__device__ float sink;

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  float acc = 0.0f;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long k = i; k < PIN_FLOATS; k += stride) {
    float v;
    asm volatile("ld.global.L2::cache_hint.f32 %0, [%1], %2;"
                 : "=f"(v)
                 : "l"(pinned + k), "l"(policy));
    acc += v;
  }
  if (acc == 12345.0f) sink = acc; // keeps the loads
}
