#!/usr/bin/env bash
# GPU test of the profile stage (docs/profile.md): builds tests/gpu/profile_kernels/known.cu with
# nvcc, profiles the known kernels through `kevo worker`'s profile op (tests/gpu/profile_worker.py)
# and checks every reply; then, where `kevo script` is given the replies, that the diagnosis names
# each kernel's bottleneck (tests/gpu/profile_diagnose.lua). Needs a GPU and ncu with access to the
# counters: exits 77 (skipped, saying why) without them.   env: KEVO, OUT (optional: replies kept)
set -u
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: test_profile needs an NVIDIA GPU and there is none here" >&2
  exit 77
fi
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
if ! command -v nvcc >/dev/null 2>&1 || ! command -v ncu >/dev/null 2>&1; then
  echo "SKIPPED: test_profile needs nvcc and ncu (Nsight Compute)" >&2
  exit 77
fi
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out="${OUT:-$tmp}"
mkdir -p "$out"
nvcc -cubin -arch="sm_$cc" -O3 -o "$tmp/known.cubin" "$here/profile_kernels/known.cu" || exit 1
PYTHONUNBUFFERED=1 python3 "$here/profile_worker.py" "${KEVO:?KEVO must name kevo}" \
  "$tmp/known.cubin" "$out" || exit $?
if [ -f "$here/profile_diagnose.lua" ]; then
  "$KEVO" script "$here/profile_diagnose.lua" "$out/profile_batch.json" || exit 1
fi
