// Vector add kernels for tests/gpu/test_worker.sh: a plain reference, correct candidates, and
// broken ones, each broken in one way the worker must name.
#include <cstdio>

extern "C" __global__ void add_ref(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// Correct: one element per thread (same as the reference, another cubin).
extern "C" __global__ void add(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// Correct and faster: four elements per thread through 16-byte loads, a scalar tail.
extern "C" __global__ void add_vec4(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int n4 = n / 4;
  if (i < n4) {
    float4 x = reinterpret_cast<const float4 *>(a)[i], y = reinterpret_cast<const float4 *>(b)[i];
    reinterpret_cast<float4 *>(c)[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  if (i < n - 4 * n4) c[4 * n4 + i] = a[4 * n4 + i] + b[4 * n4 + i];
}

// Correct, and prints from the device: the worker's stdout must stay clean.
extern "C" __global__ void add_printf(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) printf("hello from the candidate: n = %d\n", n);
  if (i < n) c[i] = a[i] + b[i];
}

// Does nothing: every output left unwritten.
extern "C" __global__ void add_nothing(const float *a, const float *b, float *c, int n) {}

// Writes only the first half.
extern "C" __global__ void add_half(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n / 2) c[i] = a[i] + b[i];
}

// Right answer, but clobbers an input afterwards.
extern "C" __global__ void add_modify_input(float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    c[i] = a[i] + b[i];
    a[i] = 0.0f;
  }
}

// Wrong at one element (a third of the way in).
extern "C" __global__ void add_wrong_one(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i] + (i == n / 3 ? 0.5f : 0.0f);
}

// Depends on the time: two runs on the same inputs disagree.
extern "C" __global__ void add_nondet(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  if (i < n) c[i] = a[i] + b[i] + (float)((t * 0x9E3779B97F4A7C15ull) >> 63) * 1e-3f;
}

// Writes through a null pointer: an illegal address, the context is lost.
extern "C" __global__ void add_null(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float *volatile p = nullptr;
  if (i < n) p[i] = a[i] + b[i];
}

// Traps.
extern "C" __global__ void add_trap(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) __trap();
  if (i < n) c[i] = a[i] + b[i];
}

// Correct for its first calls, then skips the work: only a check after timing can see it.
__device__ unsigned skip_calls;
extern "C" __global__ void add_skip_after(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned calls = *(volatile unsigned *)&skip_calls;
  if (calls < 40 && i < n) c[i] = a[i] + b[i];
  __syncthreads();
  if (i == 0) atomicAdd(&skip_calls, 1u);
}

// bf16 and i32 paths of the comparison.
extern "C" __global__ void add_bf16(const unsigned short *a, const unsigned short *b,
                                    unsigned short *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = __uint_as_float((unsigned)a[i] << 16) + __uint_as_float((unsigned)b[i] << 16);
  unsigned u = __float_as_uint(x);
  c[i] = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

extern "C" __global__ void add_i32(const int *a, const int *b, int *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void add_i32_off(const int *a, const int *b, int *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i] + (i == n - 1);
}

// Right values, plus one write just past the end of the output.
extern "C" __global__ void add_past_end(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
  if (i == n - 1) c[n] = 0.0f;
}
