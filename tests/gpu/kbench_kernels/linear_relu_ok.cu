// out[b, o] = relu(sum_k x[b, k] * W[o, k] + bias[o]): the weights are inputs like x.
extern "C" __global__ void linear_relu_kernel(const float *__restrict__ x,
                                              const float *__restrict__ linear_weight,
                                              const float *__restrict__ linear_bias,
                                              float *__restrict__ out, int batch_size,
                                              int in_features, int out_features) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)batch_size * out_features) return;
  long long b = i / out_features, o = i % out_features;
  const float *xr = x + b * in_features, *wr = linear_weight + o * in_features;
  float acc = 0.0f;
  for (int k = 0; k < in_features; k++) acc = fmaf(xr[k], wr[k], acc);
  out[i] = fmaxf(acc + linear_bias[o], 0.0f);
}
/* kevo:launch
return {kernels = {{name = "linear_relu_kernel", grid = {cdiv(batch_size * out_features, 256)},
                    block = {256},
                    args = {"x", "linear_weight", "linear_bias", "out", i32(batch_size),
                            i32(in_features), i32(out_features)}}}}
*/
