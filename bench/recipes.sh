#!/usr/bin/env bash
# Benchmark (GPU host): for every recipe, the best kernel `kevo run` finds with no LLM in its
# default strategy (autotune over the seeds' knob spaces), against PyTorch eager and
# torch.compile measured in the same run on the same shapes. %roof is the worker's roofline: % of
# the copy bandwidth for memory-bound recipes, of the compute peak for compute-bound ones; the
# matmul is also shown as % of cuBLAS (torch's bf16 matmul).
# The grouped GEMM is also shown as % of cuBLAS on one dense matmul of the same work, beside torch's
# grouped op; decode attention's eager baseline is scaled_dot_product_attention.
# usage: bench/recipes.sh [MAX_EVALS] [RECIPE...]   env: KEVO (binary), KEVO_SRC (source root),
#   BENCH_TORCH_GPU (a second GPU's index: the PyTorch baselines run there, beside kevo's runs on
#   BENCH_KEVO_GPU, default 0; when unset, not a GPU of this host, or kevo's own, they run after
#   kevo's, on kevo's GPU), BENCH_TORCH_TIMEOUT
#   (seconds for all the PyTorch baselines), BENCH_KEEP (a folder: the work files are copied there)
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
"$kevo" script "$src/bench/recipe_shapes.lua" "${names[@]}" >"$work/shapes.json"
# The PyTorch baselines run beside kevo only on a second GPU that exists (nvidia-smi -i takes an
# index or a UUID); otherwise after kevo's runs on kevo's GPU, and the log says so.
kevo_gpu="${BENCH_KEVO_GPU:-${CUDA_VISIBLE_DEVICES:-0}}"
if [ -n "${BENCH_TORCH_GPU:-}" ]; then
  if ! nvidia-smi -i "$BENCH_TORCH_GPU" -L >/dev/null 2>&1; then
    echo "bench/recipes.sh: BENCH_TORCH_GPU=$BENCH_TORCH_GPU is not a GPU of this host" \
      "($(nvidia-smi -L | wc -l) found): the PyTorch baselines run after kevo's," \
      "on GPU $kevo_gpu" >&2
    BENCH_TORCH_GPU=
  elif [ "$BENCH_TORCH_GPU" = "$kevo_gpu" ]; then
    echo "bench/recipes.sh: BENCH_TORCH_GPU is kevo's GPU ($kevo_gpu): the PyTorch baselines run" \
      "after kevo's, not beside them" >&2
    BENCH_TORCH_GPU=
  fi
fi
torch_pid=
if [ -n "${BENCH_TORCH_GPU:-}" ]; then
  CUDA_VISIBLE_DEVICES="$BENCH_TORCH_GPU" timeout "${BENCH_TORCH_TIMEOUT:-0}" \
    python3 "$src/bench/torch_baselines.py" "$work/shapes.json" >"$work/torch.json" &
  torch_pid=$!
fi
for n in "${names[@]}"; do
  echo "== kevo run $n --max-evals $max" >&2
  (cd "$work" && CUDA_VISIBLE_DEVICES="$kevo_gpu" \
    "$kevo" run "$n" --max-evals "$max" --out "$work/out/$n" >"$work/$n.run.log" 2>&1)
  tail -n 6 "$work/$n.run.log" >&2
  "$kevo" report last --json >"$work/$n.report.json" 2>/dev/null || echo '{}' >"$work/$n.report.json"
done
if [ -n "$torch_pid" ]; then
  wait "$torch_pid" || echo '{}' >"$work/torch.json"
else
  CUDA_VISIBLE_DEVICES="$kevo_gpu" timeout "${BENCH_TORCH_TIMEOUT:-0}" \
    python3 "$src/bench/torch_baselines.py" "$work/shapes.json" >"$work/torch.json" ||
    echo '{}' >"$work/torch.json"
fi
[ -s "$work/torch.json" ] || echo '{}' >"$work/torch.json"
[ -n "${BENCH_KEEP:-}" ] && cp -r "$work/." "$BENCH_KEEP/" 2>/dev/null
python3 - "$work" "${names[@]}" <<'PY'
import json, os, sys
work, names = sys.argv[1], sys.argv[2:]
torch = json.load(open(os.path.join(work, "torch.json")))
print(f"\nkevo run (autotune, no LLM) vs PyTorch on {torch.get('device', '?')}, torch {torch.get('torch', '?')}")
print(f"{'recipe':<18}{'kevo ms':>10}{'GB/s':>8}{'%roof':>7}{'eager ms':>10}{'compile ms':>11}"
      f"{'%copy':>7}{'vs eager':>9}{'vs compile':>11}  note")
for n in names:
    rep = json.load(open(os.path.join(work, f"{n}.report.json")))
    b = rep.get("best") or {}
    t = torch.get(n, {})
    k = b.get("median_ms")
    e, c = t.get("eager_ms"), t.get("compile_ms")
    f = lambda v, fmt: (fmt % v) if isinstance(v, (int, float)) else "-"
    # torch.compile's % of the copy bandwidth (the roofline kevo's %roof uses), memory-bound only
    cpct = None
    if c and t.get("bytes") and b.get("gbps") and b.get("roofline_pct") and not n.startswith(("matmul", "grouped")):
        copy = b["gbps"] * 100.0 / b["roofline_pct"]
        cpct = 100.0 * t["bytes"] / (c * 1e6) / copy
    note = ""
    if n.startswith("matmul") and k and e:
        note = f"{100 * e / k:.0f}% of cuBLAS"
    elif n.startswith("grouped") and k:
        d, g = t.get("cublas_dense_ms"), t.get("grouped_mm_ms")
        note = (f"{100 * d / k:.0f}% of cuBLAS dense ({d:.4f} ms)" if d else "no dense baseline") + \
            (f"; torch grouped_mm {g:.4f} ms ({g / k:.2f}x)" if g else
             f"; grouped_mm: {t.get('grouped_mm_error', 'absent')}") + "; eager/compile: a matmul per expert"
    elif n == "decode_attention":
        note = "eager = scaled_dot_product_attention"
    verdicts = ", ".join(f"{v} {c}" for v, c in (rep.get("verdicts") or {}).items() if v != "ok")
    if not k:
        note = "no verified kernel: " + verdicts
    elif verdicts:
        note += f" (also {verdicts})"
    if t.get("error") or t.get("compile_error"):
        note += " torch: " + (t.get("error") or t.get("compile_error"))
    print(f"{n:<18}{f(k, '%.4f'):>10}{f(b.get('gbps'), '%.0f'):>8}{f(b.get('roofline_pct'), '%.1f'):>7}"
          f"{f(e, '%.4f'):>10}{f(c, '%.4f'):>11}{f(cpct, '%.1f'):>7}{f(e / k if k and e else None, '%.2fx'):>9}"
          f"{f(c / k if k and c else None, '%.2fx'):>11}  {note}")
PY
