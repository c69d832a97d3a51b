// Class 6, a harmless form (an honest control): each thread zeroes its element of a while it
// works and restores it before it returns, so the inputs are the same after every launch.
// No check after a launch can see that, and none needs to: the reference never reads buffers a
// candidate has had (it runs on a pristine copy). `ok`.
/* kevo:launch
return {kernels = {{name = "vector_add", grid = {cdiv(N, 256)}, block = {256},
                    args = {"a", "b", "c", i32(N)}}}}
*/
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float* w = (float*)a;
  float x = w[i];
  w[i] = 0.0f;
  __threadfence();
  c[i] = x + b[i];
  w[i] = x;
}
