#!/usr/bin/env bash
# `kevo eval` on a machine (or a worker) without a GPU: compile errors come with the line,
# a good kernel compiles and then says verification needs a GPU, bad input exits 2.
# The worker is the real `kevo worker` with no visible device (CUDA_VISIBLE_DEVICES empty); a
# build without the worker command falls back to the protocol stand-in in nogpu mode.
set -u
fail=0
out=$(mktemp)
t() { # t NAME EXPECTED_RC CMD... : runs CMD, checks its exit code
  local name=$1 want=$2; shift 2
  "$@" >"$out" 2>&1; local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, want $want"; sed 's/^/  | /' "$out"; fail=1
  else echo "ok   $name"; fi
}
has() { grep -qE -- "$1" "$out" || { echo "FAIL: output lacks /$1/"; sed 's/^/  | /' "$out"; fail=1; }; }

export CUDA_VISIBLE_DEVICES=
if "$KEVO" help worker >/dev/null 2>&1; then
  echo "worker: kevo worker (no visible device)"
else
  export KEVO_WORKER="python3 $KEVO_SRC/tests/integration/fake_worker.py nogpu"
  echo "worker: stand-in (this build has no 'kevo worker' command yet)"
fi
recipe="$KEVO_SRC/recipes/softmax.yaml"
tmp=$(mktemp -d)

cat > "$tmp/broken.cu" <<'EOF'
/* kevo:launch
return {kernels = {{name = "softmax", grid = {M}, block = {256}, args = {"x", "y", i32(M), i32(N)}}}}
*/
extern "C" __global__ void softmax(const float* x, float* y, int M, int N) {
  int row = blockIdx.x;
  float s = undeclared_thing[row];
  y[row] = s;
}
EOF
t "compile error exits 1" 1 "$KEVO" eval "$recipe" "$tmp/broken.cu"
has "verdict +compile_error"
has "line 6:[0-9]+: error: .*undeclared_thing"
has "float s = undeclared_thing\[row\];"

t "good kernel compiles, then needs a GPU" 1 "$KEVO" eval "$recipe" "$KEVO_SRC/recipes/softmax/rowwise.cu" --set BLOCK=512 --set VEC=2
has "verdict +no_gpu"
has "verification needs a GPU"
has "kernel +softmax: [0-9]+ registers"

t "--json" 1 "$KEVO" eval "$recipe" "$KEVO_SRC/recipes/softmax/rowwise.cu" --json --no-bench
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["verdict"]=="no_gpu" and r["ok"] is False and r["compile"]["kernels"], r' "$out" \
  || { echo "FAIL: --json output"; fail=1; }

cat > "$tmp/badlaunch.cu" <<'EOF'
// comment
/* kevo:launch
return {kernels = {{name = "softmax", grid = {M}, block = {0}, args = {"x", "y", i32(M), i32(N)}}}}
*/
extern "C" __global__ void softmax(const float* x, float* y, int M, int N) {}
EOF
t "launch error exits 1" 1 "$KEVO" eval "$recipe" "$tmp/badlaunch.cu"
has "verdict +launch_error"
has "badlaunch.cu:2: kevo:launch: kernels\[1\].block\[1\]: must be > 0"

cat > "$tmp/bad.yaml" <<'EOF'
kevo: 1
name: bad
params: {N: 4}
inputs:
  a: {dtype: f33, shape: [N]}
outputs:
  b: {dtype: f32, shape: [N]}
reference: {lang: cuda, file: ref.cu}
EOF
t "malformed recipe exits 2" 2 "$KEVO" eval "$tmp/bad.yaml" "$tmp/broken.cu"
has "bad.yaml:[0-9]+:[0-9]+: "
KEVO_RECIPES="$KEVO_SRC/recipes" t "a recipe by name" 1 "$KEVO" eval softmax "$KEVO_SRC/recipes/softmax/rowwise.cu"
has "verification needs a GPU"
KEVO_RECIPES="$KEVO_SRC/recipes" t "an unknown recipe name exits 2" 2 "$KEVO" eval no_such_recipe "$tmp/broken.cu"
t "missing kernel file exits 2" 2 "$KEVO" eval "$recipe" "$tmp/nonexistent.cu"
t "no arguments exits 2" 2 "$KEVO" eval
has "usage: kevo eval"
t "unknown option exits 2" 2 "$KEVO" eval "$recipe" "$tmp/broken.cu" --frobnicate
t "bad --set exits 2" 2 "$KEVO" eval "$recipe" "$tmp/broken.cu" --set BLOCK
t "eval --help" 0 "$KEVO" eval --help
has "exit: 0 the kernel is correct"

# Triton candidates go through the same evaluator: compiled by the Triton servers (a disk
# cache of their own, so the compile really runs), then sent to the worker.
probe=$("$KEVO" script <(printf 'local t = require "kevo.triton"\nlocal ok, why = t.available()\nprint(ok and "yes" or why)\n') 2>&1)
if [ "$probe" != "yes" ]; then
  echo "skip Triton cases: Triton is not available to kevo: $probe (scripts/setup.sh, or KEVO_PYTHON)" >&2
else
  export KEVO_CACHE="$tmp/cache"
  t "Triton seed compiles, then needs a GPU" 1 "$KEVO" eval "$recipe" "$KEVO_SRC/recipes/softmax/softmax.py" --set BLOCK=1024 --set num_warps=8 --json
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["verdict"] == "no_gpu" and r["stage"] == "verify", r
c = r["compile"]
assert c["lang"] == "triton" and not c["diagnostics"] and not c["cached"], c
k = c["kernels"][0]
assert k["name"] == "softmax" and k["num_warps"] == 8, k
' "$out" || { echo "FAIL: Triton seed result"; sed 's/^/  | /' "$out"; fail=1; }
  t "--lang triton, default num_warps" 1 "$KEVO" eval "$recipe" "$KEVO_SRC/recipes/softmax/softmax.py" --lang triton --set BLOCK=512
  has "verdict +no_gpu"
  has "softmax: num_warps 4, num_stages 3"
  # a recipe's own seed starts where kevo run starts it: knobs its source does not default take
  # the first value of the seed's space (the matmul's 8 warps); a copy elsewhere is the user's
  mm="$KEVO_SRC/recipes/matmul_bf16.yaml"
  t "a seed: the space's first num_warps" 1 "$KEVO" eval "$mm" "$KEVO_SRC/recipes/matmul_bf16/matmul.py"
  has "matmul_bf16: num_warps 8, num_stages 3"
  t "a seed: --set wins" 1 "$KEVO" eval "$mm" "$KEVO_SRC/recipes/matmul_bf16/matmul.py" --set num_warps=4
  has "matmul_bf16: num_warps 4, num_stages 3"
  cp "$KEVO_SRC/recipes/matmul_bf16/matmul.py" "$tmp/my_matmul.py"
  t "not a seed: the compiler's default" 1 "$KEVO" eval "$mm" "$tmp/my_matmul.py"
  has "matmul_bf16: num_warps 4, num_stages 3"
  cat > "$tmp/bad_triton.py" <<'EOF'
"""kevo:launch
return {kernels = {{name = "softmax", grid = {M}, args = {"x", "y", i32(M), i32(N)}}}}
"""
import triton
import triton.language as tl


@triton.jit
def softmax(x_ptr, y_ptr, M, N, BLOCK: tl.constexpr = 1024):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N)
    tl.store(y_ptr + row * N + cols, undefined_name + x, mask=cols < N)
EOF
  t "Triton compile error exits 1" 1 "$KEVO" eval "$recipe" "$tmp/bad_triton.py"
  has "verdict +compile_error"
  has "bad_triton.py:13:38: NameError"
  has "line 13:38: error: .*undefined_name"
  sed -e 's/^import triton$/import triton\nimport os/' "$tmp/bad_triton.py" > "$tmp/evil.py"
  t "Triton allow-list refusal exits 1" 1 "$KEVO" eval "$recipe" "$tmp/evil.py"
  has "verdict +compile_error"
  has "evil.py:5:1: import of 'os' is not allowed"
  sed -e 's/grid = {M},/grid = {M}, block = {256},/' "$tmp/bad_triton.py" | sed -e 's/undefined_name + x/x/' > "$tmp/block.py"
  t "Triton: block comes from num_warps" 1 "$KEVO" eval "$recipe" "$tmp/block.py"
  has "verdict +launch_error"
  has "block for Triton kernel 'softmax' comes from num_warps"
fi

rm -rf "$tmp" "$out"
[ $fail = 0 ] && echo "eval without a GPU: all passed"
exit $fail
