#!/usr/bin/env bash
# Benchmark (GPU host): for every recipe, the best kernel `kevo run` finds with no LLM in its
# default strategy (autotune over the seeds' knob spaces), against PyTorch eager and
# torch.compile measured in the same run on the same shapes. %roof is the worker's roofline: % of
# the copy bandwidth for memory-bound recipes, of the compute peak for compute-bound ones; the
# matmul is also shown as % of cuBLAS (torch's bf16 matmul).
# usage: bench/recipes.sh [MAX_EVALS] [RECIPE...]   env: KEVO (binary), KEVO_SRC (source root)
set -u
src="${KEVO_SRC:-$(cd "$(dirname "$0")/.." && pwd)}"
kevo="${KEVO:-$src/build/kevo}"
max="${1:-16}"; shift || true
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for y in "$src"/recipes/*.yaml; do names+=("$(basename "${y%.yaml}")"); done
fi
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: bench/recipes.sh needs a GPU" >&2; exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export KEVO_DB="$work/bench.db" KEVO_RECIPES="$src/recipes"
for n in "${names[@]}"; do
  echo "== kevo run $n --max-evals $max" >&2
  (cd "$work" && "$kevo" run "$n" --max-evals "$max" --out "$work/out/$n" >"$work/$n.run.log" 2>&1)
  tail -n 6 "$work/$n.run.log" >&2
  "$kevo" report last --json >"$work/$n.report.json" 2>/dev/null || echo '{}' >"$work/$n.report.json"
done
"$kevo" script "$src/bench/recipe_shapes.lua" "${names[@]}" >"$work/shapes.json"
python3 "$src/bench/torch_baselines.py" "$work/shapes.json" >"$work/torch.json" || echo '{}' >"$work/torch.json"
python3 - "$work" "${names[@]}" <<'PY'
import json, os, sys
work, names = sys.argv[1], sys.argv[2:]
torch = json.load(open(os.path.join(work, "torch.json")))
print(f"\nkevo run (autotune, no LLM) vs PyTorch on {torch.get('device', '?')}, torch {torch.get('torch', '?')}")
print(f"{'recipe':<14}{'kevo ms':>10}{'GB/s':>8}{'%roof':>7}{'eager ms':>10}{'compile ms':>11}"
      f"{'vs eager':>9}{'vs compile':>11}  note")
for n in names:
    rep = json.load(open(os.path.join(work, f"{n}.report.json")))
    b = rep.get("best") or {}
    t = torch.get(n, {})
    k = b.get("median_ms")
    e, c = t.get("eager_ms"), t.get("compile_ms")
    f = lambda v, fmt: (fmt % v) if isinstance(v, (int, float)) else "-"
    note = ""
    if n.startswith("matmul") and k and e:
        note = f"{100 * e / k:.0f}% of cuBLAS"
    elif not k:
        note = "no verified kernel: " + ", ".join(f"{v} {c}" for v, c in (rep.get("verdicts") or {}).items())
    print(f"{n:<14}{f(k, '%.4f'):>10}{f(b.get('gbps'), '%.0f'):>8}{f(b.get('roofline_pct'), '%.1f'):>7}"
          f"{f(e, '%.4f'):>10}{f(c, '%.4f'):>11}{f(e / k if k and e else None, '%.2fx'):>9}"
          f"{f(c / k if k and c else None, '%.2fx'):>11}  {note}")
PY
