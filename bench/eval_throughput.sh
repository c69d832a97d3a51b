#!/usr/bin/env bash
# Evaluation throughput on the GPU host: candidates judged per second through kevo.evaluator
# (bench/eval_throughput.lua: N seed variants of the softmax recipe, cold compiles), latency per
# stage, and, in the same run, the same kernel built the Python-harness way
# (torch.utils.cpp_extension.load_inline) for contrast.
# usage: bench/eval_throughput.sh [N]   (KEVO=path/to/kevo or kevo-env; default build/kevo)
set -euo pipefail
cd "$(dirname "$0")/.."
kevo=${KEVO:-build/kevo}
n=${1:-24}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== kevo.evaluator: $n softmax candidates =="
set +e
"$kevo" script bench/eval_throughput.lua recipes/softmax.yaml "$n" | tee "$out/kevo.txt"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 77 ] && { echo "eval_throughput: no GPU here" >&2; exit 77; }
[ "$rc" = 0 ] || { echo "eval_throughput: the kevo run failed ($rc)" >&2; exit 1; }
per=$(sed -n 's/^KEVO_SECONDS_PER_CANDIDATE=//p' "$out/kevo.txt")

echo "== the same kernel through torch load_inline (BLOCK=256, VEC=4) =="
if python3 -c 'import torch' 2>/dev/null; then
  python3 bench/load_inline_softmax.py recipes/softmax/rowwise.cu 256 4 | tee "$out/torch.json"
  python3 - "$per" "$out/torch.json" <<'PY'
import json, sys
per = float(sys.argv[1]); t = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
python_per = t["build_s"] + t["verify_s"]
print()
print("%-34s %12s %12s" % ("per candidate", "kevo", "load_inline"))
print("%-34s %12.3f %12.3f" % ("seconds (build + verify [+ bench])", per, python_per))
print("%-34s %12.2f %12.4f" % ("candidates per second", 1 / per, 1 / python_per))
print("%-34s %12s %12.1f" % ("one-time import torch (s)", "-", t["import_s"]))
print("ratio: kevo judges %.0fx more candidates per second than a load_inline harness builds them" % (python_per / per))
print("load_inline kernel: correct=%s, %.4g ms, %.0f GB/s" % (t["correct"], t["median_ms"], t["gbps"]))
PY
else
  echo "no torch here: contrast skipped"
fi
