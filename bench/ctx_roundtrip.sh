#!/usr/bin/env bash
# The cost of the strategy boundary (issue 13): a ctx call crosses from the strategy process to
# kevo and back. Measures (1) microseconds per call for a few ctx methods through kevo run, and
# the same calls in one process (kevo script, no boundary); (2) on a recipe run (autotune on
# softmax, the synthetic evaluator taking KEVO_MODEL_DELAY s per candidate, 20 ms by default:
# faster than any real compile+verify+bench), how many ctx calls it makes and what share of
# its wall time their crossing costs. Needs no GPU.
# usage: bench/ctx_roundtrip.sh [DELAY_S]   (KEVO=path/to/kevo; default build/kevo)
set -euo pipefail
cd "$(dirname "$0")/.."
kevo=${KEVO:-build/kevo}
delay=${1:-0.02}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model=examples/cost_model.lua
export KEVO_EVALUATOR="model:$PWD/$model"

# wake-ups dominate on an idle machine, CPU contention on a busy one: every figure needs its load.
# "boundary" is kevo as it runs (it spins for a reply only while a CPU is idle: runtime/proto.h),
# "no spin" the same with KEVO_STRATEGY_SPIN=0; the boundary lines say how often kevo's side spun.
echo "== ctx calls, microseconds each (20000 calls after 500 warm-up); load average $(cut -d' ' -f1-4 /proc/loadavg) =="
for spin in 1 0; do
  KEVO_STRATEGY_SPIN=$spin KEVO_BOUNDARY_STATS=1 "$kevo" run recipes/softmax.yaml \
    --strategy bench/ctx_roundtrip.lua --db "$tmp/kevo.db" --out "$tmp/out" > "$tmp/remote$spin.log" 2>&1
  sed -n 's/^ROUNDTRIP_US //p' "$tmp/remote$spin.log" > "$tmp/remote$spin.txt"
  sed -n "s/^boundary: /spin $spin: /p" "$tmp/remote$spin.log"
done
echo "load average after: $(cut -d' ' -f1-4 /proc/loadavg)"
"$kevo" script bench/ctx_roundtrip_inproc.lua recipes/softmax.yaml "$model" \
  | sed -n 's/^ROUNDTRIP_US //p' > "$tmp/local.txt"
join "$tmp/remote1.txt" "$tmp/remote0.txt" 2>/dev/null | join - "$tmp/local.txt" 2>/dev/null \
  > "$tmp/both.txt" || true
printf '%-20s %12s %12s %12s %12s\n' "call" "boundary" "no spin" "in-process" "added"
while read -r what remote nospin local; do
  printf '%-20s %12s %12s %12s %12.2f\n' "$what" "$remote" "$nospin" "$local" \
    "$(awk -v a="$remote" -v b="$local" 'BEGIN { print a - b }')"
done < "$tmp/both.txt"
rt=$(awk '$1 == "budget_left" {print $2}' "$tmp/remote1.txt")

echo "== a recipe run: autotune on softmax, $delay s per evaluation =="
start=$(date +%s.%N)
KEVO_MODEL_DELAY=$delay KEVO_BOUNDARY_STATS=1 "$kevo" run recipes/softmax.yaml --strategy autotune \
  --max-evals 60 --db "$tmp/kevo.db" --out "$tmp/out" > "$tmp/run.txt" 2>&1 || true
wall=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { print a - b }')
calls=$(sed -n 's/^boundary: \([0-9]*\) ctx calls.*/\1/p' "$tmp/run.txt" | tail -1)
grep '^run ' "$tmp/run.txt" || true
share=$(awk -v c="$calls" -v r="$rt" -v w="$wall" 'BEGIN { print c * r / 1000000 / w * 100 }')
printf 'ctx calls: %s, wall %.2f s, crossing at %s us each: %.3f%% of the run\n' "$calls" "$wall" "$rt" "$share"
