#!/usr/bin/env bash
# kevo import on recorded descriptions (tests/kbench/*.json, made by the PyTorch bridge on the
# GPU host): no torch and no GPU needed. Each of the five problems becomes a recipe that
# kevo check accepts, with the weights as inputs in order and the exact candidate signature;
# degenerate problems are refused with the reason; bad files and bad usage exit 2.
set -u
kevo="${KEVO:?}"
src="${KEVO_SRC:?}"
kb="$src/tests/kbench"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

import() { # name [extra args]: imports tests/kbench/NAME.py with its recorded description
  local n=$1
  shift
  "$kevo" import "$kb/$n.py" --description "$kb/$n.json" --out "$tmp/r" "$@" >"$tmp/$n.out" 2>"$tmp/$n.err"
}

expect_sig() { # name signature
  if grep -qF "$2" "$tmp/r/$1.yaml" && grep -qF "$2" "$tmp/r/$1/README.md"; then
    ok "$1: signature $2"
  else
    bad "$1: signature not found: $2"; grep -F 'extern "C"' "$tmp/r/$1.yaml"
  fi
}

for n in relu sum_dim matmul conv2d linear_relu; do
  if import $n; then ok "import $n"; else bad "import $n: $(cat "$tmp/$n.err")"; continue; fi
  for f in "$tmp/r/$n.yaml" "$tmp/r/$n/problem.py" "$tmp/r/$n/README.md" "$tmp/r/$n/description.json"; do
    [ -s "$f" ] || bad "$n: $f missing"
  done
  cmp -s "$kb/$n.py" "$tmp/r/$n/problem.py" || bad "$n: problem.py is not a copy of the problem"
  if "$kevo" check "$tmp/r/$n.yaml" >"$tmp/$n.check" 2>&1; then ok "kevo check $n"; else bad "kevo check $n: $(cat "$tmp/$n.check")"; fi
  grep -q "reference  torch" "$tmp/$n.check" || bad "$n: kevo check does not show a torch reference"
done

expect_sig relu 'extern "C" __global__ void relu_kernel(const float *__restrict__ x, float *__restrict__ out, int batch_size, int dim)'
expect_sig sum_dim 'extern "C" __global__ void sum_dim_kernel(const float *__restrict__ x, float *__restrict__ out, int batch_size, int rows, int cols)'
expect_sig matmul 'extern "C" __global__ void matmul_kernel(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ out, int M, int K, int N)'
# in_channels = kernel_size = 3: the dims stay 3, but both sizes are still arguments
expect_sig conv2d 'extern "C" __global__ void conv2d_kernel(const float *__restrict__ x, const float *__restrict__ conv_weight, const float *__restrict__ conv_bias, float *__restrict__ out, int batch_size, int in_channels, int kernel_size, int height, int width, int out_channels)'
grep -q "(in_channels and kernel_size share the value 3: dims of that size are written 3.)" "$tmp/r/conv2d/README.md" \
  && ok "conv2d: the contract says which sizes share a value" || bad "conv2d: no note on shared sizes"
# KernelBench's numbered file names give plain kernel names
cp "$kb/relu.py" "$tmp/19_ReLU.py"
"$kevo" import "$tmp/19_ReLU.py" --description "$kb/relu.json" --out "$tmp/r" >"$tmp/n.out" 2>&1 \
  && grep -q 'void relu_kernel(' "$tmp/r/19_ReLU.yaml" && ! grep -q 't_19' "$tmp/r/19_ReLU.yaml" \
  && ok "19_ReLU.py: kernel relu_kernel" || bad "19_ReLU.py: $(grep -o 'void [a-z_0-9A-Z]*(' "$tmp/r/19_ReLU.yaml" | head -1) $(cat "$tmp/n.out")"
expect_sig linear_relu 'extern "C" __global__ void linear_relu_kernel(const float *__restrict__ x, const float *__restrict__ linear_weight, const float *__restrict__ linear_bias, float *__restrict__ out, int batch_size, int in_features, int out_features)'

# weights are inputs, after the forward's arguments, in named_parameters order, with their
# shapes; 3 is both in_channels and kernel_size, so it stays a number
if grep -A4 '^inputs:' "$tmp/r/conv2d.yaml" | tr -d '\n' | grep -q 'x: {dtype: f32, shape: \[batch_size, 3, height, width\].*conv_weight: {dtype: f32, shape: \[out_channels, 3, 3, 3\].*conv_bias: {dtype: f32, shape: \[out_channels\]'; then
  ok "conv2d: x, conv_weight, conv_bias in order with named dims"
else
  bad "conv2d inputs:"; sed -n '/^inputs:/,/^outputs:/p' "$tmp/r/conv2d.yaml"
fi
grep -q 'out: {dtype: f32, shape: \[batch_size, out_channels, 128, 96\]}' "$tmp/r/conv2d.yaml" \
  && ok "conv2d: output dims without a name stay numbers" || bad "conv2d output: $(grep -A1 '^outputs' "$tmp/r/conv2d.yaml")"
grep -q 'linear_weight: {dtype: f32, shape: \[out_features, in_features\], init: "uniform(' "$tmp/r/linear_relu.yaml" \
  && ok "linear_relu: the weight's init follows nn.Linear's uniform draw" || bad "linear_relu weight init: $(grep linear_weight "$tmp/r/linear_relu.yaml")"
grep -q 'out: {dtype: f32, shape: \[batch_size, 1, cols\]}' "$tmp/r/sum_dim.yaml" \
  && ok "sum_dim: keepdim output" || bad "sum_dim output: $(grep -A1 '^outputs' "$tmp/r/sum_dim.yaml")"
grep -q '^  flops: [1-9]' "$tmp/r/matmul.yaml" && ok "matmul: flops from the flop counter" || bad "matmul: no flops"
grep -q "^reference:" "$tmp/r/matmul.yaml" && grep -q "^  lang: torch" "$tmp/r/matmul.yaml" || bad "matmul: reference is not torch"

# the recipe loads through kevo.recipe too, tensors in order
cat >"$tmp/load.lua" <<'LUA'
local recipe = require "kevo.recipe"
local r = assert(recipe.load(arg[1]))
local names = {}
for _, t in ipairs(r.inputs) do names[#names + 1] = t.name end
io.write(table.concat(names, ","), " ", r.reference.lang, "\n")
LUA
got=$("$kevo" script "$tmp/load.lua" "$tmp/r/linear_relu.yaml" 2>&1)
[ "$got" = "x,linear_weight,linear_bias torch" ] && ok "kevo.recipe.load: $got" || bad "kevo.recipe.load: $got"

# degenerate references are refused with the reason
for n in degenerate_zero degenerate_weights; do
  import $n; rc=$?
  if [ $rc -eq 2 ] && grep -q "degenerate" "$tmp/$n.err"; then ok "$n refused: $(cat "$tmp/$n.err")"; else bad "$n: exit $rc $(cat "$tmp/$n.err")"; fi
  [ ! -e "$tmp/r/$n.yaml" ] || bad "$n: a recipe was written"
done
grep -q "constant" "$tmp/degenerate_zero.err" || bad "degenerate_zero: reason should say constant"
grep -q "do not depend on the inputs" "$tmp/degenerate_weights.err" || bad "degenerate_weights: reason should say it ignores its inputs"

# bad problem files and bad usage: exit 2 with a clear message
"$kevo" import "$kb/bad_no_model.py" --description "$kb/relu.json" --out "$tmp/r" 2>"$tmp/e1"; rc=$?
[ $rc -eq 2 ] && grep -q "defines no class Model" "$tmp/e1" && ok "no Model: $(cat "$tmp/e1")" || bad "no Model: exit $rc $(cat "$tmp/e1")"
"$kevo" import "$kb/bad_no_inputs.py" --description "$kb/relu.json" --out "$tmp/r" 2>"$tmp/e2"; rc=$?
[ $rc -eq 2 ] && grep -q "get_inputs()" "$tmp/e2" && ok "no get_inputs: $(cat "$tmp/e2")" || bad "no get_inputs: exit $rc $(cat "$tmp/e2")"
"$kevo" import "$tmp/nope.py" 2>"$tmp/e3"; rc=$?
[ $rc -eq 2 ] && ok "missing file: $(cat "$tmp/e3")" || bad "missing file: exit $rc"
"$kevo" import 2>/dev/null; [ $? -eq 2 ] && ok "no argument: exit 2" || bad "no argument"
"$kevo" import "$kb/relu.py" --bogus 2>/dev/null; [ $? -eq 2 ] && ok "unknown option: exit 2" || bad "unknown option"
echo '{"kevo_description": 1, "inputs": [{"name": "x", "dtype": "f33", "shape": [4]}], "outputs": []}' >"$tmp/bad.json"
"$kevo" import "$kb/relu.py" --description "$tmp/bad.json" --out "$tmp/r2" 2>"$tmp/e4"; rc=$?
[ $rc -eq 2 ] && grep -q "unknown dtype 'f33'" "$tmp/e4" && ok "bad description: $(cat "$tmp/e4")" || bad "bad description: exit $rc $(cat "$tmp/e4")"
echo 'not json' >"$tmp/bad2.json"
"$kevo" import "$kb/relu.py" --description "$tmp/bad2.json" --out "$tmp/r2" 2>/dev/null; [ $? -eq 2 ] && ok "description not JSON: exit 2" || bad "description not JSON"
# an existing recipe is kept unless --force
import relu; rc=$?
[ $rc -eq 2 ] && grep -q "exists" "$tmp/relu.err" && ok "existing recipe kept" || bad "existing recipe: exit $rc"
import relu --force && ok "--force overwrites" || bad "--force: $(cat "$tmp/relu.err")"
# Honest tolerances and refusals, from descriptions edited here the way the bridge writes them
# (python/kb_bridge.py: outputs[].stats, random, nondeterminism, tolerance.why; the bridge's side
# runs on the GPU host, tests/gpu/test_kbench.sh).
desc() { # desc OUT.json PYTHON-EXPR-ON-d: relu.json changed by the expression
  python3 - "$kb/relu.json" "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
PY
}
timport() { # timport NAME DESC: imports relu.py under NAME with DESC; output in $tmp/NAME.out
  "$kevo" import "$kb/relu.py" --name "$1" --description "$2" --out "$tmp/t" >"$tmp/$1.out" 2>&1
}
# softmax over a long row: outputs ~1e-6, so atol 1e-5 would pass an all-zero kernel
desc "$tmp/tiny.json" 'd["outputs"][0]["stats"] = {"min": 1.48e-06, "max": 4.02e-06, "absmax": 4.02e-06}; d["tolerance"]["measured"] = 3.1e-13'
if timport tiny "$tmp/tiny.json" && grep -q "f32: {atol: 5e-12, rtol: 1e-05}" "$tmp/t/tiny.yaml" \
   && grep -q "atol 1e-05 would pass an all-zero kernel" "$tmp/t/tiny.yaml" && grep -q "tolerance f32 atol 5e-12" "$tmp/tiny.out"; then
  ok "tiny outputs: atol rescaled, and why"
else bad "tiny outputs: $(cat "$tmp/tiny.out"; grep -A1 '^tolerance' "$tmp/t/tiny.yaml")"; fi
# outputs that span less than the tolerance: a constant would pass
desc "$tmp/narrow.json" 'd["outputs"][0]["stats"] = {"min": 999.99, "max": 1000.01, "absmax": 1000.01}; d["tolerance"]["measured"] = 1e-9'
timport narrow "$tmp/narrow.json" && grep -q "would pass a constant kernel" "$tmp/t/narrow.yaml" \
  && ok "narrow outputs: rescaled against a constant kernel: $(grep -A1 '^tolerance' "$tmp/t/narrow.yaml" | tail -1)" || bad "narrow outputs: $(cat "$tmp/narrow.out")"
# torch's own error as large as the outputs: refused, with the figures
desc "$tmp/hopeless.json" 'd["outputs"][0]["stats"] = {"min": 0.0, "max": 1e-09, "absmax": 1e-09}; d["tolerance"]["measured"] = 1e-10'
timport hopeless "$tmp/hopeless.json"; rc=$?
[ $rc -eq 2 ] && grep -q "refused: output out is at most 1e-09 in size" "$tmp/hopeless.out" \
  && ok "hopeless tolerance refused: $(cat "$tmp/hopeless.out")" || bad "hopeless: exit $rc $(cat "$tmp/hopeless.out")"
# no float64 measurement: the default, said with the reason
desc "$tmp/nomeasure.json" 'd["tolerance"] = {"f32": None, "why": "the model in float64 failed: RuntimeError: no double kernel"}'
timport nomeasure "$tmp/nomeasure.json" && grep -q "kevo's default for f32, not measured: the model in float64 failed" "$tmp/t/nomeasure.yaml" \
  && grep -q "f32: {atol: 1e-05, rtol: 1e-05}" "$tmp/t/nomeasure.yaml" && ok "unmeasured tolerance: the default, said" || bad "unmeasured: $(cat "$tmp/nomeasure.out")"
# a reference that is nondeterministic at the level of rounding widens the tolerance
desc "$tmp/nondet.json" 'd["nondeterminism"] = 3e-6'
timport nondet "$tmp/nondet.json" && grep -q "f32: {atol: 5e-05, rtol: 5e-05}" "$tmp/t/nondet.yaml" \
  && grep -q "run-to-run spread (3e-06)" "$tmp/t/nondet.yaml" && ok "nondeterministic reference: tolerance widened" || bad "nondet: $(grep -A1 '^tolerance' "$tmp/t/nondet.yaml")"
# a random reference is refused with its cause
desc "$tmp/random.json" 'd["random"] = "the reference is random: two runs on the same inputs and weights differ by up to 2 (relative); cause: drop (nn.Dropout, p=0.5) in training mode. A kernel cannot match a random reference"'
timport random "$tmp/random.json"; rc=$?
[ $rc -eq 2 ] && grep -q "refused: the reference is random.*nn.Dropout, p=0.5" "$tmp/random.out" \
  && ok "random reference refused" || bad "random: exit $rc $(cat "$tmp/random.out")"

# the footprint is the peak of one reference forward, and import prints it beside the import's
# peak in the words bench/kb_sweep.py reads
desc "$tmp/foot.json" 'd.update(peak_gpu_bytes=15 << 30, footprint_bytes=12 << 30, io_bytes=6 << 30, forward_extra_bytes=9 << 30)'
timport foot "$tmp/foot.json" && grep -q "^import peak GPU memory 15 GiB for a problem of 12 GiB (the peak of one reference forward; inputs, weights and outputs 6 GiB) (its f32 forward adds 9 GiB above its inputs)" "$tmp/foot.out" \
  && ok "footprint: the forward's peak, printed as the sweep reads it" || bad "footprint line: $(grep peak "$tmp/foot.out")"
# judging memory (python/kb_bridge.py judge_bytes, no torch needed): level1/38_L1Norm_ (8 GiB in,
# 8 GiB out, its forward adds 16 GiB) takes three sets in the worker and five outputs in the
# bridge, 88 GiB: it fits the H200's 141 GiB (90%: 127), where five sets of everything did not;
# three times as large does not
got=$(cd "$src/python" && PYTHONDONTWRITEBYTECODE=1 python3 -c '
import kb_bridge as b
G = 1 << 30
print("%.4g %.4g" % (b.judge_bytes(8 * G, 0, 8 * G, 16 * G, 2) / G,
                     b.judge_bytes(24 * G, 0, 24 * G, 48 * G, 2) / G))')
[ "$got" = "88.01 264" ] && ok "judging memory: L1Norm 88 GiB, three times that 264 GiB" || bad "judge_bytes: $got"

# without torch the bridge says so, naming the variable to set (python3 here has none; on a
# machine with torch, skip); KEVO_PYTHON is the variable, KEVO_TORCH_PYTHON its older name
if ! python3 -c "import torch" 2>/dev/null; then
  KEVO_PYTHON=python3 "$kevo" import "$kb/relu.py" --out "$tmp/r3" 2>"$tmp/e5"; rc=$?
  [ $rc -eq 1 ] && grep -q "no torch" "$tmp/e5" && grep -q 'from \$KEVO_PYTHON: set KEVO_PYTHON' "$tmp/e5" \
    && ok "no torch: exit 1: $(cat "$tmp/e5")" || bad "no torch: exit $rc $(cat "$tmp/e5")"
  env -u KEVO_PYTHON KEVO_TORCH_PYTHON=python3 "$kevo" import "$kb/relu.py" --out "$tmp/r3" 2>"$tmp/e7"; rc=$?
  [ $rc -eq 1 ] && grep -q 'KEVO_TORCH_PYTHON (the older name of \$KEVO_PYTHON)' "$tmp/e7" \
    && ok "the older KEVO_TORCH_PYTHON still read, and named" || bad "KEVO_TORCH_PYTHON: exit $rc $(cat "$tmp/e7")"
fi
KEVO_PYTHON=/nonexistent/python3 "$kevo" import "$kb/relu.py" --out "$tmp/r3" 2>"$tmp/e6"; rc=$?
[ $rc -eq 1 ] && grep -q "not an executable file: set KEVO_PYTHON" "$tmp/e6" && ok "no python: $(cat "$tmp/e6")" || bad "no python: exit $rc $(cat "$tmp/e6")"

echo "$fails failure(s)"
[ $fails -eq 0 ]
