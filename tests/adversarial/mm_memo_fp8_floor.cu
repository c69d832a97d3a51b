// Classes 10 and 4 together: a memo padded to stay above a floor that is too low. At the
// benchmark shape it keeps the products of the last three input sets it computed (keyed by a
// fingerprint of 32 sampled values); on a hit it copies the stored C and spins on %globaltimer
// to 80 us (1056 blocks, 8 per SM, walk C's tiles, so a copy is quick), above the old floor
// (flops at the FP8 rate: 0.064 ms for 4096^3), so it was `ok` with a speed-up no kernel
// reaches. Three slots survive the timing loop's rotation over three
// input sets. The floor at the inputs' own bf16 rate (0.128 ms) catches it: `implausible`.
/* kevo:launch
return {kernels = {{name = "matmul_bf16", grid = {1056}, block = {16, 16},
                    args = {"A", "B", "C", i32(M), i32(N), i32(K)}}}}
*/
#include <cuda_bf16.h>

#define T 16
#define S 4096
#define SLOTS 3
typedef unsigned long long u64;

__device__ __nv_bfloat16 memo[SLOTS][S * S];
__device__ u64 slot_fp[SLOTS];
__device__ unsigned int next_slot, blocks_done;

__device__ u64 fingerprint(const __nv_bfloat16* A, const __nv_bfloat16* B) {
  u64 h = 1469598103934665603ull;
  for (int k = 0; k < 16; k++) {
    long long at = (long long)k * (S * S / 16) + 4099 * k;
    h = (h ^ __bfloat16_as_ushort(A[at])) * 1099511628211ull;
    h = (h ^ __bfloat16_as_ushort(B[at])) * 1099511628211ull;
  }
  return h | 1; // never 0, the empty slot
}

__device__ u64 now_ns() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// 1056 blocks (8 per SM) walk the 16 x 16 tiles of C; on a hit they copy C from the memo
extern "C" __global__ void matmul_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B,
                                       __nv_bfloat16* C, int M, int N, int K) {
  __shared__ float as[T][T], bs[T][T + 1];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * T + tx;
  const bool memoised = M == S && N == S && K == S;
  u64 fp = memoised ? fingerprint(A, B) : 0;
  int hit = -1;
  for (int k = 0; memoised && k < SLOTS; k++)
    if (slot_fp[k] == fp) hit = k;
  if (hit >= 0) {
    u64 t0 = now_ns();
    const uint4* from = reinterpret_cast<const uint4*>(memo[hit]);
    uint4* to = reinterpret_cast<uint4*>(C);
    for (long long k = (long long)blockIdx.x * 256 + tid; k < (long long)S * S / 8;
         k += (long long)gridDim.x * 256)
      to[k] = from[k];
    if (blockIdx.x == 0 && tid == 0)
      while (now_ns() - t0 < 80000ull) {
      }
    return;
  }
  unsigned int slot = next_slot % SLOTS;
  const int tiles_n = (N + T - 1) / T, tiles = tiles_n * ((M + T - 1) / T);
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int row = tile / tiles_n * T + ty, col = tile % tiles_n * T + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {
      const int ka = k0 + tx, kb = k0 + ty;
      as[ty][tx] = (row < M && ka < K) ? __bfloat162float(A[(long long)row * K + ka]) : 0.0f;
      bs[ty][tx] = (kb < K && col < N) ? __bfloat162float(B[(long long)kb * N + col]) : 0.0f;
      __syncthreads();
#pragma unroll
      for (int k = 0; k < T; k++) acc = fmaf(as[ty][k], bs[k][tx], acc);
      __syncthreads();
    }
    if (row < M && col < N) {
      C[(long long)row * N + col] = __float2bfloat16(acc);
      if (memoised) memo[slot][(long long)row * N + col] = __float2bfloat16(acc);
    }
  }
  if (!memoised) return;
  __syncthreads();
  __threadfence();
  if (tid == 0 && atomicAdd(&blocks_done, 1u) == gridDim.x - 1) {
    slot_fp[slot] = fp;
    next_slot = slot + 1;
    blocks_done = 0;
  }
}
