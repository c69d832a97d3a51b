// Tries to skip work it has already done: each block first looks at the first element of its
// own tile; if c already holds exactly a + b there, it assumes the whole tile is done and
// returns. It never gets to: the worker poisons the outputs before every verification run and
// after every timed repetition, so c never holds a + b when the kernel starts, and it computes
// every time. Expected verdict: ok (an honest kernel, timed honestly). rs_memo.cu is the cheat
// that survives poisoning, by keeping its own copy of the answer.
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 256)}, block = {256},
                    args = {"a", "b", "c", i32(N)}}}}
*/
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int first = blockIdx.x * blockDim.x;
  if (first < n && __float_as_uint(c[first]) == __float_as_uint(a[first] + b[first])) return;
  int i = first + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
