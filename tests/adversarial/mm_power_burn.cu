// Class 9, by power: tries to slow the reference with state the L2 reset cannot clear, the
// chip's power and clocks. Its answer is the reference's own tiled kernel (honest); at the
// benchmark shape a second kernel then runs every unit flat out for BURN loop iterations (about
// 12 ms at the default): a third of the warps the tensor cores (bf16 mma on operands that change
// every step), a third the FMA units, a third stream a 1 GiB scratch buffer through HBM (knob
// MEM=0 leaves them idle). Were the board driven over its power limit, the SM clock would be cut
// and the reference, timed right after it in half of the timing loop's pairs, would run slower
// than alone: the drift check would flag it and take the speed-up against its time alone. On
// the H200 (700 W) it is not: the SM clock stayed at 1980 MHz and the reference's drift was
// 0.02% to 0.05% (docs/worker.md, "Threat model"), so it is `ok` with no drift, a control
// that the drift check does not fire on a slow, hot but honest kernel.
/* kevo:launch
local big = M == 4096 and N == 4096 and K == 4096
return {
  kernels = {
    {name = "matmul_bf16", grid = {cdiv(N, 16), cdiv(M, 16)}, block = {16, 16},
     args = {"A", "B", "C", i32(M), i32(N), i32(K)}},
    {name = "burn", grid = {1056}, block = {384}, args = {i32(M), i32(N), i32(K), "C", "junk"}},
  },
  scratch = {junk = {bytes = big and 1073741824 or 16, zero = false}},
}
*/
#include <cuda_bf16.h>

#ifndef BURN
#define BURN 60000
#endif
#ifndef MEM
#define MEM 1
#endif
#define T 16

extern "C" __global__ void matmul_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B,
                                       __nv_bfloat16* C, int M, int N, int K) {
  __shared__ float as[T][T], bs[T][T + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += T) {
    const int ka = k0 + tx, kb = k0 + ty;
    as[ty][tx] = (row < M && ka < K) ? __bfloat162float(A[(long long)row * K + ka]) : 0.0f;
    bs[ty][tx] = (kb < K && col < N) ? __bfloat162float(B[(long long)kb * N + col]) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < T; k++)
      acc = fmaf(as[ty][k], bs[k][tx], acc);
    __syncthreads();
  }
  if (row < M && col < N) C[(long long)row * N + col] = __float2bfloat16(acc);
}

// Work whose result nobody reads (it reaches C only if it is a value no run gives): only at
// the benchmark shape, so verification stays quick.
extern "C" __global__ void burn(int M, int N, int K, __nv_bfloat16* C, float4* junk) {
  if (M != 4096 || N != 4096 || K != 4096) return;
#if __CUDA_ARCH__ >= 800
  unsigned s = threadIdx.x * 2654435761u + blockIdx.x;
  const int role = (threadIdx.x >> 5) % 3;
  float x = 0;
  if (role == 1) { // the FMA pipe, beside the tensor cores
    float f[8], y = __uint_as_float(0x3f7ff000u | (s & 15u));
    for (int j = 0; j < 8; j++)
      f[j] = (float)(s + j);
    for (int i = 0; i < 2 * BURN; i++)
#pragma unroll
      for (int j = 0; j < 8; j++)
        f[j] = fmaf(f[j], y, 1e-7f);
    for (int j = 0; j < 8; j++)
      x += f[j];
  } else if (role == 2) { // HBM: stream the scratch buffer, read and write
    if (!MEM) return;
    const long long n = (1ll << 30) / 16, stride = (long long)gridDim.x * 128;
    const int mine = (threadIdx.x >> 5) / 3 * 32 + (threadIdx.x & 31); // 0 .. 127
    long long at = (long long)blockIdx.x * 128 + mine;
    for (int i = 0; i < BURN / 8; i++, at = (at + stride) % n) {
      float4 v = junk[at];
      v.x += 1.0f;
      junk[at] = v;
    }
  } else { // the tensor cores: bf16 mma on operands that toggle every step
    unsigned a[4] = {s, s ^ 0x3c003c00u, s + 0x01000100u, s * 3u}, b[2] = {s >> 1, s ^ 0x3c00u};
    float d[4][4] = {};
    for (int i = 0; i < BURN; i++) {
#pragma unroll
      for (int j = 0; j < 4; j++)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
      a[i & 3] = a[i & 3] * 1664525u + 1013904223u;
      b[i & 1] ^= a[i & 3];
    }
    for (int j = 0; j < 4; j++)
      x += d[j][0] + d[j][1] + d[j][2] + d[j][3];
  }
  if (x == 1234.5f) C[0] = __float2bfloat16(x);
#endif
}
