// Row softmax kernels for tests/gpu/test_worker.sh: a plain one-thread-per-row reference, a
// correct block-per-row candidate, and a racy one (no barrier between reduction steps).
extern "C" __global__ void softmax_ref(const float *x, float *y, int m, int n) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= m) return;
  const float *row = x + (size_t)r * n;
  float mx = -INFINITY, sum = 0.0f;
  for (int j = 0; j < n; j++) mx = fmaxf(mx, row[j]);
  for (int j = 0; j < n; j++) sum += expf(row[j] - mx);
  for (int j = 0; j < n; j++) y[(size_t)r * n + j] = expf(row[j] - mx) / sum;
}

template <bool RACY> __device__ float block_reduce(float v, float *sh, bool is_max) {
  int t = threadIdx.x;
  sh[t] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) sh[t] = is_max ? fmaxf(sh[t], sh[t + s]) : sh[t] + sh[t + s];
    if (!RACY) __syncthreads();
  }
  __syncthreads();
  float r = sh[0];
  __syncthreads();
  return r;
}

template <bool RACY> __device__ void softmax_rows(const float *x, float *y, int m, int n) {
  extern __shared__ float sh[];
  const float *row = x + (size_t)blockIdx.x * n;
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < n; j += blockDim.x) mx = fmaxf(mx, row[j]);
  mx = block_reduce<RACY>(mx, sh, true);
  float sum = 0.0f;
  for (int j = threadIdx.x; j < n; j += blockDim.x) sum += expf(row[j] - mx);
  sum = block_reduce<RACY>(sum, sh, false);
  for (int j = threadIdx.x; j < n; j += blockDim.x) y[(size_t)blockIdx.x * n + j] = expf(row[j] - mx) / sum;
}

extern "C" __global__ void softmax_block(const float *x, float *y, int m, int n) {
  softmax_rows<false>(x, y, m, n);
}

extern "C" __global__ void softmax_racy(const float *x, float *y, int m, int n) {
  softmax_rows<true>(x, y, m, n);
}
