// Class 6: modifying an input for good and repairing the checksum. It computes c = a + b
// right, then flips the last bit of a[0] and rewrites a word of a's padding (the bytes after
// the last element, up to the allocation's 256-byte rounding) so the old keyless input
// checksum, sum of mix64(word ^ mix64(index)), is unchanged. It remembers what it changed, so
// its own later outputs stay right. A keyed digest over the whole allocation sees both
// changes: `input_modified`.
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 256)}, block = {256},
                    args = {"a", "b", "c", i32(N)}}}}
*/
typedef unsigned long long u64;
__device__ const float* changed_ptr;
__device__ unsigned int changed_bits;
__device__ float original;

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
__device__ u64 inverse_odd(u64 a) {
  u64 x = a;
  for (int k = 0; k < 6; k++) x *= 2 - a * x;
  return x;
}
__device__ u64 unmix64(u64 z) {
  z = unxorshift(z, 31) * inverse_odd(0x94D049BB133111EBull);
  z = unxorshift(z, 27) * inverse_odd(0xBF58476D1CE4E5B9ull);
  return unxorshift(z, 30) - 0x9E3779B97F4A7C15ull;
}

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i];
  bool mine = i == 0 && changed_ptr == a && __float_as_uint(x) == changed_bits;
  if (mine) x = original; // the value it changed: use the real one
  c[i] = x + b[i];
  u64 bytes = (u64)n * 4, padded = (bytes + 255) / 256 * 256;
  if (i != 0 || mine || padded - bytes < 16) return; // needs a whole padding word after a[0..1]
  u64* words = (u64*)a;
  u64 pad_at = (bytes + 7) / 8; // the first whole word of padding
  u64 w0 = words[0], pad = words[pad_at];
  u64 w0_new = w0 ^ 1ull; // a[0]'s last bit
  u64 delta = mix64(w0_new ^ mix64(0)) - mix64(w0 ^ mix64(0));
  u64 pad_new = unmix64(mix64(pad ^ mix64(pad_at)) - delta) ^ mix64(pad_at);
  original = x;
  words[0] = w0_new;
  words[pad_at] = pad_new;
  changed_bits = (unsigned int)w0_new;
  changed_ptr = a;
}
