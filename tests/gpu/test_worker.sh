#!/usr/bin/env bash
# GPU test of `kevo worker`: builds the cubins in tests/gpu/kernels with nvcc for this GPU's
# arch, then tests/gpu/worker_test.py sends evaluate requests and checks every verdict (good,
# unwritten, input_modified, wrong, nondeterministic, launch_error, crash and respawn,
# skip-after-N caught after timing, implausible) and prints the bench figures.
# Needs a GPU: exits 77 (skipped) without one.   env: KEVO (the binary or bin/kevo-env)
set -u
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: test_worker needs an NVIDIA GPU and there is none here" >&2
  exit 77
fi
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done
if ! command -v nvcc >/dev/null 2>&1; then
  echo "SKIPPED: test_worker needs nvcc to build its test kernels" >&2
  exit 77
fi
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in "$here"/kernels/*.cu; do
  nvcc -cubin -arch="sm_$cc" -O3 -o "$tmp/$(basename "${f%.cu}").cubin" "$f" || exit 1
done
PYTHONUNBUFFERED=1 python3 "$here/worker_test.py" "${KEVO:?KEVO must name kevo}" "$tmp"
