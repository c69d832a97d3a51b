#!/usr/bin/env bash
# GPU test of a KernelBench problem whose tensors are over 1 GiB (tests/kbench/relu.py at
# batch_size 16384, dim 24577: 1.6 GB in, 1.6 GB out), which no frame can carry: `kevo import`
# with real torch, then `kevo eval` of relu_ok.cu (judged ok, timed beside eager and
# torch.compile, the tensors shared with the bridge through CUDA IPC: bench.tensors_via "ipc")
# and of relu_wrong.cu (judged wrong, verify only). Prints each step's wall time.
# Needs a GPU and python3 with torch ($KEVO_PYTHON): exits 77 (skipped) without them.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
src="${KEVO_SRC:-$here/../..}"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: test_kbench_big needs an NVIDIA GPU and there is none here" >&2
  exit 77
fi
py="${KEVO_PYTHON:-python3}"
if ! "$py" -c "import torch" >/dev/null 2>&1; then
  echo "SKIPPED: test_kbench_big needs python3 with torch (set KEVO_PYTHON)" >&2
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -e 's/^batch_size = .*/batch_size = 16384/' -e 's/^dim = .*/dim = 24577/' \
  "$src/tests/kbench/relu.py" > "$tmp/relu.py"
fail=0
field() { python3 -c 'import json,sys
d=json.load(sys.stdin)
for k in sys.argv[1].split("."): d = d.get(k, {}) if isinstance(d, dict) else {}
print(d if d != {} else "")' "$1"; }

t0=$SECONDS
if ! "$KEVO" import "$tmp/relu.py" --out "$tmp" > "$tmp/import.txt" 2>&1; then
  echo "FAIL: kevo import of the 1.6 GB relu"; cat "$tmp/import.txt"; exit 1
fi
echo "import: $((SECONDS - t0)) s"; tail -5 "$tmp/import.txt"

t0=$SECONDS
"$KEVO" eval "$tmp/relu.yaml" "$here/kbench_kernels/relu_ok.cu" --json > "$tmp/ok.json" 2> "$tmp/ok.err"
v=$(field verdict < "$tmp/ok.json")
via=$(field bench.tensors_via < "$tmp/ok.json")
echo "eval relu_ok: $((SECONDS - t0)) s, verdict $v, tensors via $via, median $(field bench.median_ms < "$tmp/ok.json") ms, eager $(field bench.eager_ms < "$tmp/ok.json") ms, torch.compile $(field bench.compiled_ms < "$tmp/ok.json") ms"
[ "$v" = ok ] || { echo "FAIL: relu_ok judged '$v': $(field message < "$tmp/ok.json")"; tail -5 "$tmp/ok.err"; fail=1; }
[ "$via" = ipc ] || { echo "FAIL: tensors went through '$via', not CUDA IPC: $(field bench.ipc_error < "$tmp/ok.json")"; fail=1; }

t0=$SECONDS
"$KEVO" eval "$tmp/relu.yaml" "$here/kbench_kernels/relu_wrong.cu" --json --no-bench > "$tmp/wrong.json" 2> "$tmp/wrong.err"
v=$(field verdict < "$tmp/wrong.json")
echo "eval relu_wrong: $((SECONDS - t0)) s, verdict $v"
[ "$v" = wrong ] || { echo "FAIL: relu_wrong judged '$v': $(field message < "$tmp/wrong.json")"; tail -5 "$tmp/wrong.err"; fail=1; }
exit $fail
