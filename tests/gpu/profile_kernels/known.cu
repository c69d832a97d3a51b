// Kernels whose bottleneck is known, for the profile stage's GPU test (tests/gpu/test_profile.sh)
// and bench/profile.sh: each must be diagnosed with the bottleneck named beside it.
#include <cuda_fp16.h>
#include <mma.h>

// Near peak DRAM bandwidth: a vectorised copy.
extern "C" __global__ void copy_vec4(const float4 *x, float4 *y, long n4) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n4) y[i] = x[i];
}

// Shared-memory bank conflicts: every lane of a warp hits the same bank (stride 32 words).
extern "C" __global__ void bank_conflicts(const float *x, float *y, long n) {
  __shared__ float s[32 * 33 * 8];
  int t = threadIdx.x;
  long i = blockIdx.x * (long)blockDim.x + t;
  s[(t * 32) % (32 * 33 * 8)] = i < n ? x[i] : 0.f;
  __syncthreads();
  float acc = 0.f;
  for (int r = 0; r < 256; r++) acc += s[((t + r) * 32) % (32 * 33 * 8)];
  if (i < n) y[i] = acc;
}

// Occupancy limited by registers: 160 values stay live per thread.
#define LIVE 160
extern "C" __global__ void __launch_bounds__(256, 1) register_heavy(const float *x, float *y,
                                                                      long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float a[LIVE];
#pragma unroll
  for (int k = 0; k < LIVE; k++) a[k] = x[(i + k * 4099) % n];
#pragma unroll
  for (int it = 0; it < 4; it++) // a[k] needs a[LIVE-1-k]: every value stays live
#pragma unroll
    for (int k = 0; k < LIVE; k++) a[k] = fmaf(a[k], a[LIVE - 1 - k], 0.5f);
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < LIVE; k++) s += a[k];
  y[i] = s;
}

// Uncoalesced: neighbouring threads read addresses 32 floats apart (one sector each).
extern "C" __global__ void uncoalesced(const float *x, float *y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n / 32) y[i] = x[(i * 32) % n] + x[(i * 32 + 1) % n];
}

// Compute-bound on the tensor cores: a chain of 16x16x16 half-precision MMAs in registers.
extern "C" __global__ void tensor_mma(const __half *h, float *y, int iters) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
  wmma::load_matrix_sync(a, h, 16);
  wmma::load_matrix_sync(b, h + 256, 16);
  wmma::fill_fragment(c, 0.f);
  for (int k = 0; k < iters; k++) wmma::mma_sync(c, a, b, c);
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  wmma::store_matrix_sync(y + (long)(warp % 4096) * 256, c, 16, wmma::mem_row_major);
}

// Compute-bound on the FMA pipe: eight independent chains of FP32 fused multiply-adds per thread
// (no memory traffic in the loop); the values converge to 1, so no overflow or denormals.
extern "C" __global__ void fma_chains(const float *x, float *y, long n, int iters) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  float v = x[i % n], a[8];
#pragma unroll
  for (int k = 0; k < 8; k++) a[k] = v + k;
  for (int it = 0; it < iters; it++)
#pragma unroll
    for (int k = 0; k < 8; k++) a[k] = fmaf(a[k], 0.999f, 0.001f);
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < 8; k++) s += a[k];
  if (i < n) y[i] = s;
}
