#!/usr/bin/env bash
# kevo export's artifacts on a real GPU: the fixture's best softmax is exported for this GPU's
# arch, a C program launches it through kernel_launch.h (the embedded cubin, the driver API)
# and checks rows against a host softmax; torch_ext.py and make_test_vectors.py run too when
# PyTorch is installed. Needs a GPU: exits 77 (skipped, loudly) without one.
set -u
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU here (nvidia-smi -L failed): the exported kernel cannot be launched" >&2
  exit 77
fi
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
"$KEVO" script "$KEVO_SRC/tests/integration/report_fixture.lua" "$tmp/kevo.db" >/dev/null || { echo "FAIL: fixture"; exit 1; }
# measured on this GPU: rewrite the fixture's fingerprint arch so the cubin targets it
cat > "$tmp/arch.lua" <<'LUA'
local db = assert(require("kevo.archive").open(arg[1]))
local json = require "kevo.json"
local best = db:best(1)
local fp = json.decode(best.fingerprint)
fp.cc = {tonumber(arg[2]:sub(1, -2)), tonumber(arg[2]:sub(-1))}
db:eval_add{candidate = best.candidate, stage = "done", verdict = "ok", ok = true, speedup = best.speedup + 1,
            result = best.result, fingerprint = fp}
LUA
"$KEVO" script "$tmp/arch.lua" "$tmp/kevo.db" "$cc" || { echo "FAIL: arch"; exit 1; }
(cd "$KEVO_SRC" && "$KEVO" export 1 "$tmp/ex" --db "$tmp/kevo.db") || { echo "FAIL: export"; exit 1; }
cat > "$tmp/main.c" <<'C'
#include "kernel_launch.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#define CK(x) do { CUresult r_ = (x); if (r_) { const char *s; cuGetErrorName(r_, &s); printf("%s: %s\n", #x, s); return 1; } } while (0)
int main(void) {
  CUdevice dev; CUcontext ctx; kevo_kernel k;
  CK(cuInit(0)); CK(cuDeviceGet(&dev, 0)); CK(cuCtxCreate(&ctx, NULL, 0, dev));
  CK(kevo_kernel_load(&k, NULL));
  size_t M = KEVO_KERNEL_M, N = KEVO_KERNEL_N, n = M * N;
  float *hx = malloc(n * 4), *hy = malloc(n * 4);
  srand(1); for (size_t i = 0; i < n; i++) hx[i] = (float)rand() / RAND_MAX * 8 - 4;
  CUdeviceptr x, y; CK(cuMemAlloc(&x, n * 4)); CK(cuMemAlloc(&y, n * 4));
  CK(cuMemcpyHtoD(x, hx, n * 4));
  if (kevo_kernel_launch(&k, 0, x, y, 1, 1) != CUDA_ERROR_INVALID_VALUE) { printf("wrong shape accepted\n"); return 1; }
  CK(kevo_kernel_launch(&k, 0, x, y, M, N)); CK(cuCtxSynchronize());
  CK(cuMemcpyDtoH(hy, y, n * 4));
  double worst = 0;
  for (size_t r = 0; r < M; r += 97) {
    double m = -1e30, s = 0; const float *row = hx + r * N;
    for (size_t j = 0; j < N; j++) m = fmax(m, row[j]);
    for (size_t j = 0; j < N; j++) s += exp(row[j] - m);
    for (size_t j = 0; j < N; j++) worst = fmax(worst, fabs(exp(row[j] - m) / s - hy[r * N + j]));
  }
  CUevent a, b; float ms; CK(cuEventCreate(&a, 0)); CK(cuEventCreate(&b, 0));
  CK(cuEventRecord(a, 0)); for (int i = 0; i < 20; i++) CK(kevo_kernel_launch(&k, 0, x, y, M, N));
  CK(cuEventRecord(b, 0)); CK(cuEventSynchronize(b)); CK(cuEventElapsedTime(&ms, a, b));
  printf("kernel_launch.h on GPU: max abs err %.3g over sampled rows, %.4f ms per launch\n", worst, ms / 20);
  kevo_kernel_unload(&k);
  return worst < 1e-5 ? 0 : 1;
}
C
cuda=${CUDA_HOME:-/usr/local/cuda}
if gcc -O2 -std=c11 -I"$cuda/include" -I"$tmp/ex" "$tmp/main.c" -o "$tmp/main" -lcuda -lm 2>"$tmp/cc.log" ||
   gcc -O2 -std=c11 -I"$cuda/include" -I"$tmp/ex" "$tmp/main.c" -o "$tmp/main" -L"$cuda/lib64/stubs" -lcuda -lm 2>"$tmp/cc.log"; then
  "$tmp/main" && echo "ok   kernel_launch.h launches a correct kernel" || { echo "FAIL: kernel_launch.h run"; fail=1; }
else
  echo "FAIL: the C check does not build"; cat "$tmp/cc.log"; fail=1
fi
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  (cd "$tmp/ex" && python3 make_test_vectors.py --out "$tmp/tv.pt") && echo "ok   make_test_vectors.py" ||
    { echo "FAIL: make_test_vectors.py"; fail=1; }
else
  echo "note: no PyTorch with CUDA here: torch_ext.py and make_test_vectors.py not run" >&2
fi
exit $fail
