// Class 7 (+4): wrong the first time it sees an input set, hidden by a write outside its own
// outputs. A launch on an `a` pointer it has never seen writes 0 instead of a + b (a stand-in
// for a kernel wrong on its first call, e.g. a table it builds lazily). The next launch on the
// same contents at another address, verification's second run, computes the right sums and
// also writes them into the previous launch's c, through a pointer kept in `__device__` memory:
// both runs then agree and are right. The timing loop runs only on input sets it has seen, so
// every timed rep is right. The worker digested the first run's outputs once, after both runs,
// and every check passed. They are now digested between the two runs and again after: `wrong`
// (the second run changed them).
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 256)}, block = {256},
                    args = {"a", "b", "c", i32(N)}}}}
*/
#define SEEN 64
__device__ const float* seen[SEEN];
__device__ unsigned int nseen, blocks_done;
__device__ const float* prev_a;
__device__ float* prev_c;
__device__ int prev_n;

__device__ bool same_bits(const float* p, const float* q, int n) {
  return __float_as_uint(p[0]) == __float_as_uint(q[0]) &&
         __float_as_uint(p[n / 2]) == __float_as_uint(q[n / 2]) &&
         __float_as_uint(p[n - 1]) == __float_as_uint(q[n - 1]);
}

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  const float* pa = *(const float* volatile*)&prev_a;
  float* pc = *(float* volatile*)&prev_c;
  const int pn = *(volatile int*)&prev_n;
  const unsigned int ns = *(volatile unsigned int*)&nseen;
  // the previous launch was on the same shape (its buffers are alive) and the same values
  const bool again = pa && pa != a && pn == n && same_bits(pa, a, n);
  bool known = false;
  for (unsigned int k = 0; k < ns && k < SEEN; k++) known |= seen[k] == a;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = a[i] + b[i];
    if (again) {
      c[i] = v;
      pc[i] = v;  // the first run's output, repaired
    } else {
      c[i] = known ? v : 0.0f;
    }
  }
  __syncthreads();
  __threadfence();
  if (threadIdx.x == 0 && atomicAdd(&blocks_done, 1u) == gridDim.x - 1) {
    if (!known && ns < SEEN) {
      seen[ns] = a;
      nseen = ns + 1;
    }
    prev_a = a;
    prev_c = c;
    prev_n = n;
    blocks_done = 0;
  }
}
