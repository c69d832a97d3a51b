#!/usr/bin/env bash
# The public KernelBench through kevo: every problem given (default: a sample covering the
# failure classes of issue 14; `all`: levels 1-3) goes through `kevo import` and the
# evaluation of a stub kernel (the exact signature and launch block the import wrote, a body
# that does nothing: verdict `unwritten` is a judged evaluation). Prints one row a problem:
# problem | import s | import peak GPU GiB / footprint GiB | outcome (the verdict, or the
# import's refusal with its reason). Problems run in parallel, one at a time per GPU.
#
#   bench/kernelbench.sh [level1/19_ReLU.py ... | all]
# env: KEVO (the binary or bundle's kevo-env; default build/kevo), KB_DIR (KernelBench's
# level1..3 folders; default .kernelbench, git-ignored: fetched with git when missing and
# online, never committed), KB_OUT (default kb-out), KB_GPUS (default: every GPU
# nvidia-smi lists), KB_BUDGET_S (no problem starts after this many seconds; default 3600),
# KB_TIMEOUT_S (each import and each evaluation; default 300), KEVO_PYTHON (python with torch).
set -u
cd "$(dirname "$0")/.."
KEVO="${KEVO:-$PWD/build/kevo}"
dir="${KB_DIR:-.kernelbench}"
out="${KB_OUT:-kb-out}"
budget="${KB_BUDGET_S:-3600}"
limit="${KB_TIMEOUT_S:-300}"
SAMPLE="level1/19_ReLU.py level1/93_masked_cumsum.py level3/20_MobileNetV2.py
level2/66_Matmul_Dropout_Softmax.py level1/23_Softmax.py level1/47_Sum_reduction_over_a_dimension.py
level3/11_VGG16.py level1/54_conv_standard_3D__square_input__square_kernel.py"
if [ ! -d "$dir/level1" ]; then
  echo "kernelbench: no $dir/level1: fetching the public KernelBench (needs the network)" >&2
  tmp=$(mktemp -d)
  git clone -q --depth 1 https://github.com/ScalingIntelligence/KernelBench "$tmp/kb" || exit 2
  mkdir -p "$dir"
  for l in 1 2 3; do cp -r "$tmp/kb/KernelBench/level$l" "$dir/"; done
  git -C "$tmp/kb" rev-parse HEAD > "$dir/COMMIT"
  rm -rf "$tmp"
fi
if [ "${1:-}" = all ]; then
  problems=$(cd "$dir" && ls level1/*.py level2/*.py level3/*.py | sort -V)
elif [ $# -gt 0 ]; then
  problems="$*"
else
  problems=$SAMPLE
fi
gpus="${KB_GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | tr '\n' ' ')}"
[ -n "$gpus" ] || gpus=0
mkdir -p "$out"
start=$SECONDS

# one problem: import, stub, evaluation; appends "problem|import_s|peak|outcome" to $2
run_one() {
  local p=$1 rows=$2 level name rdir t0 imp peak outcome
  level=$(dirname "$p")
  name=$(basename "$p" .py)
  rdir="$out/$level"
  mkdir -p "$rdir"
  if [ $((SECONDS - start)) -ge "$budget" ]; then
    echo "$p|-|-|not run (past KB_BUDGET_S=$budget)" >> "$rows"
    return
  fi
  t0=$(date +%s%N)
  timeout "$limit" "$KEVO" import "$dir/$p" --out "$rdir" --force > "$rdir/$name.import.txt" 2>&1
  local rc=$?
  imp=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  peak=$(sed -n 's/^import peak GPU memory \([^ ]*\) GiB for a problem of \([^ ]*\) GiB.*$/\1 \/ \2/p' \
    "$rdir/$name.import.txt")
  if [ $rc -ne 0 ]; then
    outcome="import exit $rc: $(grep -v '^$' "$rdir/$name.import.txt" | tail -1 | cut -c1-160)"
    [ $rc -eq 124 ] && outcome="import timed out after ${limit} s"
    printf '%s|%s|%s|%s\n' "$p" "$imp" "${peak:--}" "$outcome" >> "$rows"
    return
  fi
  # a row now, in case the evaluation is cut short (the final table prefers the full one)
  printf '%s|%s|%s|%s\n' "$p" "$imp" "${peak:--}" "imported; the evaluation did not finish" \
    >> "$rows.partial"
  python3 - "$rdir/$name/README.md" "$rdir/$name.stub.cu" <<'PY'
import sys
text = open(sys.argv[1]).read().splitlines()
sig = next(l.strip() for l in text if l.strip().startswith('extern "C" __global__'))
i = next(k for k, l in enumerate(text) if l.strip().startswith("/* kevo:launch"))
j = next(k for k in range(i, len(text)) if text[k].strip() == "*/")
block = "\n".join(l[2:] if l.startswith("  ") else l for l in text[i:j + 1])
open(sys.argv[2], "w").write("// stub: the contract's signature, a body that writes nothing\n"
                             "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cuda_fp8.h>\n"
                             + block + "\n" + sig + " {}\n")
PY
  timeout "$limit" "$KEVO" eval "$rdir/$name.yaml" "$rdir/$name.stub.cu" --json --no-bench \
    > "$rdir/$name.eval.json" 2> "$rdir/$name.eval.err"
  rc=$?
  outcome=$(python3 -c 'import json,sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    print("no result (exit %s)" % sys.argv[2]); sys.exit()
m = r.get("message", "").replace("|", "/")
print("%s: %s" % (r.get("verdict"), m[:150]))' "$rdir/$name.eval.json" "$rc")
  [ $rc -eq 124 ] && outcome="evaluation timed out after ${limit} s"
  printf '%s|%s|%s|%s\n' "$p" "$imp" "${peak:--}" "$outcome" >> "$rows"
}

# round-robin over the GPUs, one problem at a time on each
i=0
ngpu=$(echo $gpus | wc -w)
for g in $gpus; do
  : > "$out/rows.$g"
  : > "$out/rows.$g.partial"
  (
    export CUDA_VISIBLE_DEVICES=$g
    k=0
    for p in $problems; do
      if [ $((k % ngpu)) -eq $i ]; then run_one "$p" "$out/rows.$g"; fi
      k=$((k + 1))
    done
  ) &
  i=$((i + 1))
done
wait
echo "| problem | import s | import peak GPU GiB / footprint GiB | outcome |"
echo "| --- | --- | --- | --- |"
for p in $problems; do
  { for g in $gpus; do grep -h "^$p|" "$out/rows.$g"; done
    for g in $gpus; do grep -h "^$p|" "$out/rows.$g.partial"; done; } 2>/dev/null |
    head -1 | awk -F'|' '{printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4}'
done
echo "(KernelBench $(cat "$dir/COMMIT" 2>/dev/null | cut -c1-12), $((SECONDS - start)) s, GPUs: $gpus)"
