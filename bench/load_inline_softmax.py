#!/usr/bin/env python3
"""The contrast for bench/eval_throughput.sh: the same softmax seed kernel built the way Python
harnesses build CUDA candidates (torch.utils.cpp_extension.load_inline, one extension per
candidate), verified against torch.softmax and timed with CUDA events.
usage: load_inline_softmax.py KERNEL.cu BLOCK VEC     prints one JSON line"""
import json
import os
import re
import sys
import tempfile
import time

t0 = time.time()
import torch  # noqa: E402
from torch.utils.cpp_extension import load_inline  # noqa: E402
t_import = time.time() - t0

path, block, vec = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
src = open(path).read()
src = re.sub(r"/\*\s*kevo:launch.*?\*/", "", src, flags=re.S)
cuda = f"#define BLOCK {block}\n#define VEC {vec}\n" + src + """
#include <torch/extension.h>
torch::Tensor run(torch::Tensor x) {
  auto y = torch::empty_like(x);
  int M = x.size(0), N = x.size(1);
  softmax<<<M, BLOCK>>>(x.data_ptr<float>(), y.data_ptr<float>(), M, N);
  return y;
}
"""
cpp = "torch::Tensor run(torch::Tensor x);"
build_dir = tempfile.mkdtemp(prefix="kevo-load-inline-")
t0 = time.time()
mod = load_inline(name=f"kevo_softmax_{os.getpid()}", cpp_sources=cpp, cuda_sources=cuda,
                  functions=["run"], build_directory=build_dir, verbose=False,
                  extra_cuda_cflags=["-O3", "-arch=sm_90"])
t_build = time.time() - t0

M, N = 16384, 8192
x = torch.randn(M, N, device="cuda")
t0 = time.time()
y = mod.run(x)
ok = torch.allclose(y, torch.softmax(x, dim=1), atol=1e-5, rtol=1e-5)
torch.cuda.synchronize()
t_verify = time.time() - t0
for _ in range(10):
    mod.run(x)
times = []
for _ in range(100):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    mod.run(x)
    b.record()
    torch.cuda.synchronize()
    times.append(a.elapsed_time(b))
times.sort()
print(json.dumps({"import_s": t_import, "build_s": t_build, "verify_s": t_verify, "correct": bool(ok),
                  "median_ms": times[len(times) // 2], "gbps": 8 * M * N / (times[len(times) // 2] * 1e-3) / 1e9}))
