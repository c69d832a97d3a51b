// Wrong on purpose: conv2d_ok.cu as if the layer had padding 1 (an off-by-one window: input row
// oh + kh - 1, zeros outside), while the problem's nn.Conv2d has none.
extern "C" __global__ void conv2d_kernel(const float *__restrict__ x,
                                         const float *__restrict__ conv_weight,
                                         const float *__restrict__ conv_bias,
                                         float *__restrict__ out, int batch_size,
                                         int in_channels, int kernel_size, int height, int width,
                                         int out_channels) {
  const int C = in_channels, KS = kernel_size;
  int oh_n = height - KS + 1, ow_n = width - KS + 1;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)batch_size * out_channels * oh_n * ow_n) return;
  int ow = (int)(i % ow_n), oh = (int)(i / ow_n % oh_n);
  int o = (int)(i / ((long long)ow_n * oh_n) % out_channels);
  long long b = i / ((long long)ow_n * oh_n * out_channels);
  const float *w = conv_weight + (long long)o * C * KS * KS;
  float acc = 0.0f;
  for (int c = 0; c < C; c++)
    for (int kh = 0; kh < KS; kh++)
      for (int kw = 0; kw < KS; kw++) {
        int ih = oh + kh - 1, iw = ow + kw - 1;
        if (ih < 0 || ih >= height || iw < 0 || iw >= width) continue;
        acc = fmaf(x[((b * C + c) * height + ih) * (long long)width + iw],
                   w[(c * KS + kh) * KS + kw], acc);
      }
  out[i] = acc + conv_bias[o];
}
/* kevo:launch
return {kernels = {{name = "conv2d_kernel",
                    grid = {cdiv(batch_size * out_channels * (height - 2) * (width - 2), 256)},
                    block = {256},
                    args = {"x", "conv_weight", "conv_bias", "out", i32(batch_size),
                            i32(in_channels), i32(kernel_size), i32(height), i32(width),
                            i32(out_channels)}}}}
*/
