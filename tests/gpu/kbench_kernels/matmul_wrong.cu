// Wrong on purpose: the tiled product of matmul_ok.cu, but the last tile of k is never loaded
// (K / TILE - 1 tiles), so every output misses 16 of its 2048 terms.
#define TILE 16
extern "C" __global__ void matmul_kernel(const float *__restrict__ A, const float *__restrict__ B,
                                         float *__restrict__ out, int M, int K, int N) {
  __shared__ float As[TILE][TILE], Bs[TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 + TILE < K; k0 += TILE) {
    As[ty][tx] = row < M ? A[(long long)row * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = col < N ? B[(long long)(k0 + ty) * N + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TILE; k++) acc = fmaf(As[ty][k], Bs[k][tx], acc);
    __syncthreads();
  }
  if (row < M && col < N) out[(long long)row * N + col] = acc;
}
/* kevo:launch
return {kernels = {{name = "matmul_kernel", grid = {cdiv(N, 16), cdiv(M, 16)}, block = {16, 16},
                    args = {"A", "B", "out", i32(M), i32(K), i32(N)}}}}
*/
