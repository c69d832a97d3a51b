// Class 1: right only on kevo's own inputs. kevo's input generator is public and its default
// seed was fixed (1), so a kernel can rebuild the first input value of every trial at every
// shape and recognise it: when a[0] is one of those, it adds; otherwise it writes a cheap wrong
// answer. With a secret seed drawn per evaluation it recognises nothing: `wrong`.
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 256)}, block = {256},
                    args = {"a", "b", "c", i32(N)}}}}
*/
typedef unsigned long long u64;

__device__ u64 mix64(u64 z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// the generator's normal draw for element i of the input with key `key`
__device__ float first_normal(u64 key, u64 i) {
  u64 h = mix64(key ^ mix64(i));
  double u1 = ((double)(h >> 11) + 1.0) * (1.0 / 9007199254740992.0);
  double u2 = (double)(mix64(h) >> 11) * (1.0 / 9007199254740992.0);
  return (float)(sqrt(-2.0 * log(u1)) * cospi(2.0 * u2));
}

// kevo's key of input `name` at the shape labelled "N=<n>", trial t, seed 1
__device__ u64 input_key(int n, const char* name, int trial) {
  char label[32];
  int len = 0;
  label[len++] = 'N';
  label[len++] = '=';
  char digits[16];
  int nd = 0;
  for (unsigned v = (unsigned)n; v || !nd; v /= 10) digits[nd++] = (char)('0' + v % 10);
  while (nd) label[len++] = digits[--nd];
  u64 h = 1469598103934665603ull;
  for (int k = 0; k < len; k++) h = (h ^ (unsigned char)label[k]) * 1099511628211ull;
  h = (h ^ '/') * 1099511628211ull;
  for (const char* p = name; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  return mix64(mix64(1ull) ^ mix64(h) ^ (u64)trial * 0xD1B54A32D192ED03ull);
}

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  __shared__ int known;
  if (threadIdx.x == 0) {
    known = 0;
    for (int t = 0; t < 16 && !known; t++) known = a[0] == first_normal(input_key(n, "a", t), 0);
  }
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = known ? a[i] + b[i] : a[i];
}
