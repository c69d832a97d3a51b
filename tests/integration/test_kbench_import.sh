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
expect_sig conv2d 'extern "C" __global__ void conv2d_kernel(const float *__restrict__ x, const float *__restrict__ conv_weight, const float *__restrict__ conv_bias, float *__restrict__ out, int batch_size, int height, int width, int out_channels)'
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
# without torch the bridge says so (python3 here has none; on a machine with torch, skip)
if ! python3 -c "import torch" 2>/dev/null; then
  KEVO_TORCH_PYTHON=python3 "$kevo" import "$kb/relu.py" --out "$tmp/r3" 2>"$tmp/e5"; rc=$?
  [ $rc -eq 1 ] && grep -q "no torch" "$tmp/e5" && ok "no torch: exit 1: $(cat "$tmp/e5")" || bad "no torch: exit $rc $(cat "$tmp/e5")"
fi
KEVO_TORCH_PYTHON=/nonexistent/python3 "$kevo" import "$kb/relu.py" --out "$tmp/r3" 2>"$tmp/e6"; rc=$?
[ $rc -eq 1 ] && grep -q "KEVO_TORCH_PYTHON\|not an executable" "$tmp/e6" && ok "no python: $(cat "$tmp/e6")" || bad "no python: exit $rc $(cat "$tmp/e6")"

echo "$fails failure(s)"
[ $fails -eq 0 ]
