#!/usr/bin/env bash
# GPU test of KernelBench problems: kevo import with real torch on tests/kbench/*.py, then
# `kevo eval` of every hand-written CUDA kernel in tests/gpu/kbench_kernels (P_ok.cu judged ok,
# P_wrong.cu wrong: relu, sum_dim, matmul, conv2d, linear_relu) against the PyTorch reference,
# then the worker's external reference path step by step (tests/gpu/kbench_test.py) with the
# kernels below built by nvcc; relu's eager / torch.compile baselines printed last.
# Needs a GPU, nvcc and python3 with torch: exits 77 (skipped) without them.
# env: KEVO (the binary or bin/kevo-env), KEVO_SRC (the source tree), KBENCH_OUT (optional:
# where the descriptions the bridge made are saved, to refresh tests/kbench/*.json)
set -u
here="$(cd "$(dirname "$0")" && pwd)"
src="${KEVO_SRC:-$here/../..}"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: test_kbench needs an NVIDIA GPU and there is none here" >&2
  exit 77
fi
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
if ! command -v nvcc >/dev/null 2>&1; then
  echo "SKIPPED: test_kbench needs nvcc to build its test kernels" >&2
  exit 77
fi
# the python with torch: KEVO_PYTHON (kevo's variable), or the older KEVO_TORCH_PYTHON when a
# set-up still names it (it wins here: it can only mean torch's python)
py="${KEVO_TORCH_PYTHON:-${KEVO_PYTHON:-python3}}"
if ! "$py" -c "import torch" >/dev/null 2>&1; then
  echo "SKIPPED: test_kbench needs python3 with torch (set KEVO_PYTHON)" >&2
  exit 77
fi
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for k in relu_ok relu_wrong sum_dim_ok linear_relu_ok; do # the protocol cases of kbench_test.py
  f="$here/kbench_kernels/$k.cu"
  nvcc -cubin -arch="sm_$cc" -O3 -o "$tmp/$(basename "${f%.cu}").cubin" "$f" || exit 1
done
PYTHONUNBUFFERED=1 "$py" "$here/kbench_test.py" "${KEVO:?KEVO must name kevo}" "$src" "$tmp" ${KBENCH_OUT:+"$KBENCH_OUT"}
