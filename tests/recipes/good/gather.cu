/* A test fixture (tests/recipes/good.yaml): y[i, :] = x[idx[i], :]. */
/* kevo:launch
return {kernels = {{name = "gather_rows", grid = {M}, block = {128},
                    args = {"x", "idx", "y", i32(M), i32(N)}}}}
*/
extern "C" __global__ void gather_rows(const float* x, const int* idx, float* y, int M, int N) {
  const int i = blockIdx.x;
  if (i >= M) return;
  for (int j = threadIdx.x; j < N; j += blockDim.x)
    y[(long long)i * N + j] = x[(long long)idx[i] * N + j];
}
