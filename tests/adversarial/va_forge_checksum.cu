// Class 5: forging the per-repetition output check. The old check was a keyless sum over the
// output buffer's 8-byte words, guard band included, of mix64(word ^ mix64(index)): public, so
// a kernel can compute it. In its honest launches this one computes that sum for its own
// output (T) and for an all-poison buffer (P). For launches 56 to 69 (past verification's 54 on
// these modules: the timing loop) it writes nothing but word 0, chosen by inverting mix64 so
// that the sum over the still-poisoned buffer is T again, and spins to an honest time. The
// check after the loop finds it honest again. Against a keyed digest whose key it never sees,
// the forged word is just wrong: `wrong` at stage bench.
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 512)}, block = {256},
                    args = {"a", "b", "c", i32(N)}}}}
*/
typedef unsigned long long u64;
#define FORGE_FROM 56u
#define FORGE_UNTIL 70u
#define BENCH_N 268435456
#define POISON_A 0x7FC0A5A57FC0A5A5ull // the old worker's f32 pattern A

__device__ unsigned int launches;
__device__ unsigned int blocks_done;
__device__ u64 acc_t[2], acc_p[2]; // per launch parity: sum over the output, over poison
__device__ u64 final_t, final_p;

__device__ u64 mix64(u64 z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
__device__ u64 unxorshift(u64 y, int s) {
  u64 x = y;
  for (int k = 0; k < 64 / s + 1; k++) x = y ^ (x >> s);
  return x;
}
__device__ u64 inverse_odd(u64 a) { // a^-1 mod 2^64 by Newton's iteration
  u64 x = a;
  for (int k = 0; k < 6; k++) x *= 2 - a * x;
  return x;
}
__device__ u64 unmix64(u64 z) {
  z = unxorshift(z, 31) * inverse_odd(0x94D049BB133111EBull);
  z = unxorshift(z, 27) * inverse_odd(0xBF58476D1CE4E5B9ull);
  return unxorshift(z, 30) - 0x9E3779B97F4A7C15ull;
}
__device__ u64 now_ns() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  unsigned int seen = *(volatile unsigned int*)&launches;
  bool forge = n == BENCH_N && seen >= FORGE_FROM && seen < FORGE_UNTIL;
  u64 w = (u64)(blockIdx.x * blockDim.x + threadIdx.x); // this thread's 8-byte word
  if (forge) {
    if (w == 0) {
      u64 t0 = now_ns();
      u64 rest = final_p - mix64(POISON_A ^ mix64(0));
      u64 word0 = unmix64(final_t - rest) ^ mix64(0);
      ((u64*)c)[0] = word0;
      while (now_ns() - t0 < 800000ull) {
      }
    }
  } else {
    u64 i = 2 * w;
    if (i < (u64)n) c[i] = a[i] + b[i];
    if (i + 1 < (u64)n) c[i + 1] = a[i + 1] + b[i + 1];
    if (n == BENCH_N) {
      u64 words = ((u64)n * 4 + 256 + 255) / 256 * 256 / 8; // the old buffer: output + guard
      u64 bits = ((u64)__float_as_uint(c[i + 1]) << 32) | __float_as_uint(c[i]);
      u64 tv = mix64(bits ^ mix64(w)), pv = mix64(POISON_A ^ mix64(w));
      __shared__ u64 part[2][8];
      for (int o = 16; o > 0; o >>= 1) {
        tv += __shfl_down_sync(0xffffffffu, tv, o);
        pv += __shfl_down_sync(0xffffffffu, pv, o);
      }
      if (threadIdx.x % 32 == 0) part[0][threadIdx.x / 32] = tv, part[1][threadIdx.x / 32] = pv;
      __syncthreads();
      if (threadIdx.x == 0) {
        for (int k = 1; k < 8; k++) tv += part[0][k], pv += part[1][k];
        atomicAdd(&acc_t[seen & 1], tv);
        atomicAdd(&acc_p[seen & 1], pv);
      }
      if (w == 0)
        for (u64 g = (u64)n / 2; g < words; g++) { // the guard band keeps the poison
          atomicAdd(&acc_t[seen & 1], mix64(POISON_A ^ mix64(g)));
          atomicAdd(&acc_p[seen & 1], mix64(POISON_A ^ mix64(g)));
        }
    }
  }
  __syncthreads();
  __threadfence();
  if (threadIdx.x == 0 && atomicAdd(&blocks_done, 1u) == gridDim.x - 1) {
    if (n == BENCH_N && !forge) {
      final_t = acc_t[seen & 1];
      final_p = acc_p[seen & 1];
    }
    acc_t[seen & 1] = acc_p[seen & 1] = 0;
    launches = seen + 1;
    blocks_done = 0;
  }
}
