/* topk reference: K rounds per row, each a block-wide maximum (shared-memory tree) of the
 * elements' keys below the previous round's key. A key is the value's bits made order-preserving
 * above 0xffffffff - index, so equal values rank the lower index first and every key is unique.
 * Reads the row K times: plain on purpose, it is the yardstick. */
/* kevo:launch
return {
  kernels = {
    {name = "topk", grid = {M}, block = {256}, shared = 0,
     args = {"x", "values", "indices", i32(M), i32(V), i32(K)}},
  },
}
*/
typedef unsigned long long u64;

extern "C" __global__ void topk(const float* x, float* values, long long* indices, int M, int V,
                                int K) {
  __shared__ u64 part[256];
  const int row = blockIdx.x, tid = threadIdx.x;
  if (row >= M) return;
  const float* xr = x + (long long)row * V;
  u64 prev = ~0ull;
  for (int k = 0; k < K; k++) {
    u64 best = 0;
    for (int i = tid; i < V; i += blockDim.x) {
      unsigned u = __float_as_uint(xr[i]);
      u ^= (u & 0x80000000u) ? 0xffffffffu : 0x80000000u;
      const u64 key = ((u64)u << 32) | (u64)(0xffffffffu - (unsigned)i);
      if (key < prev && key > best) best = key;
    }
    part[tid] = best;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (tid < s && part[tid + s] > part[tid]) part[tid] = part[tid + s];
      __syncthreads();
    }
    prev = part[0];
    __syncthreads();
    if (tid == 0) {
      unsigned u = (unsigned)(prev >> 32);
      u ^= (u & 0x80000000u) ? 0x80000000u : 0xffffffffu;
      values[(long long)row * K + k] = __uint_as_float(u);
      indices[(long long)row * K + k] = (long long)(0xffffffffu - (unsigned)(prev & 0xffffffffu));
    }
  }
}
