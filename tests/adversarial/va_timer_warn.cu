// Class 11: timing-dependent code in an honest kernel. It reads %globaltimer and clock64()
// (to keep a __device__ record of its own duration) and naps with __nanosleep: nothing it does
// changes its answer. Such reads are a warning carried into the result and the feedback, not a
// verdict (a kernel that used them to change its answer would fail the per-repetition check):
// `ok`, with warnings.
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 256)}, block = {256},
                    args = {"a", "b", "c", i32(N)}}}}
*/
__device__ unsigned long long last_ns, last_clocks;

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  unsigned long long t0, t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  long long k0 = clock64();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
  if (i == 0) {
    __nanosleep(100);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    last_ns = t1 - t0;
    last_clocks = (unsigned long long)(clock64() - k0);
  }
}
