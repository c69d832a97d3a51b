#!/usr/bin/env bash
# The profile stage on the GPU host (docs/profile.md "Measured"):
#  1. the time to profile: tests/gpu/profile_worker.py sends the worker one profile request of a
#     single candidate and one of eight (one ncu run each) and prints the wall time of each, the
#     time per candidate in the batch and the marginal one;
#  2. the diagnosis of the known kernels (a copy near peak DRAM, bank conflicts, register-limited,
#     uncoalesced, tensor cores, the FMA pipe) from the metric sets just measured
#     (tests/gpu/profile_diagnose.lua);
#  3. with the loopback LLM replaying a fixed script of replies, that each prompt names the
#     bottleneck of the kernel before it (tests/integration/test_profile_llm.sh fed the metric
#     sets of step 1: the fake worker stands in only for verification, which these kernels,
#     not being copies, would fail).
# Needs a GPU, nvcc and ncu with access to the counters: exits 77 (skipped, saying why) without.
# env: KEVO (bin/kevo-env of a bundle, or the binary), KEVO_SRC; OUT (optional: keep the replies)
set -u
src="${KEVO_SRC:-$(cd "$(dirname "$0")/.." && pwd)}"
export KEVO_SRC="$src"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: bench/profile.sh needs an NVIDIA GPU" >&2
  exit 77
fi
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
command -v nvcc >/dev/null && command -v ncu >/dev/null ||
  { echo "SKIPPED: bench/profile.sh needs nvcc and ncu" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out="${OUT:-$tmp}"
mkdir -p "$out"
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
nvcc -cubin -arch="sm_$cc" -O3 -o "$tmp/known.cubin" "$src/tests/gpu/profile_kernels/known.cu" || exit 1
echo "== 1. time to profile"
python3 "$src/tests/gpu/profile_worker.py" "${KEVO:?}" "$tmp/known.cubin" "$out" || exit $?
echo "== 2. diagnosis of the known kernels"
"$KEVO" script "$src/tests/gpu/profile_diagnose.lua" "$out/profile_batch.json" || exit 1
echo "== 3. the loopback LLM: each prompt names the last kernel's bottleneck"
PROFILE_REPLY="$out/profile_batch.json" bash "$src/tests/integration/test_profile_llm.sh"
