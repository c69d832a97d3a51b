// Class 7: writing outside the outputs, far past the end: into the slack of the output's
// allocation, 4 KiB and (for large outputs) 1 MiB after its last element. A fixed 256-byte
// guard band never sees it and the allocation's granularity keeps it from faulting. The worker
// poisons and checks the whole slack of every allocation: `wrong`.
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 256)}, block = {256},
                    args = {"a", "b", "c", i32(N)}}}}
*/
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
  if (i == 0) {
    c[(long long)n + 1024] = 1.0f;
    if (n >= (1 << 20)) c[(long long)n + 262144] = 1.0f;
  }
}
