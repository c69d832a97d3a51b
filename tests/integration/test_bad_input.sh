#!/usr/bin/env bash
# Hostile and mistaken input to the CLI: every case is refused at once, with exit 2 (bad usage
# or input), a message that names what is wrong, and no run row, hang or traceback.
set -u
fail=0
out=$(mktemp)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$out"' EXIT
t() { # t NAME EXPECTED_RC CMD... : runs CMD (10 s at most), checks its exit code
  local name=$1 want=$2; shift 2
  timeout 10 "$@" >"$out" 2>&1 </dev/null; local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, want $want"; sed 's/^/  | /' "$out" | head -20; fail=1
  else echo "ok   $name"; fi
}
has() { grep -qF -- "$1" "$out" || { echo "FAIL: output lacks '$1'"; sed 's/^/  | /' "$out" | head -20; fail=1; }; }
lacks() { ! grep -qF -- "$1" "$out" || { echo "FAIL: output has '$1'"; sed 's/^/  | /' "$out" | head -20; fail=1; }; }
cd "$tmp" || exit 1
export KEVO_DB=$tmp/kevo.db
src=$KEVO_SRC/recipes

# Paths that are not regular files: one wording everywhere, and nothing blocks on a FIFO.
mkfifo fifo.cu fifo.yaml
mkdir dir.cu dir.yaml
ln -s loop.yaml loop2.yaml && ln -s loop2.yaml loop.yaml
for p in fifo.cu dir.cu loop.yaml /dev/zero; do
  t "eval kernel $p" 2 "$KEVO" eval vector_add "$p"; has "$p: is not a regular file"
done
for p in fifo.yaml dir.yaml loop.yaml /dev/null fifo.cu; do
  t "check $p" 2 "$KEVO" check "$p"; has "$p: is not a regular file"
  t "eval recipe $p" 2 "$KEVO" eval "$p" "$src/vector_add/vectorized.cu"; has "$p: is not a regular file"
done
t "check DIR" 2 "$KEVO" check "$tmp"; has "$tmp: is not a regular file (a directory)"
t "check ." 2 "$KEVO" check .; has ".: is not a regular file (a directory)"
has_fifo_msg() { has "is not a regular file (a FIFO)"; }
t "new from a FIFO" 2 "$KEVO" new x fifo.cu --param N=4; has_fifo_msg
mkfifo fifo.lua
t "run --strategy FIFO" 2 "$KEVO" run vector_add --strategy ./fifo.lua --db "$tmp/s.db"
has "is not a regular file"
mkdir -p strategies && mkfifo strategies/hang.lua
t "list with a FIFO in ./strategies" 0 "$KEVO" list
rm -rf strategies

# Deeply nested YAML is refused at the level past 64, cheaply (it was quadratic: 200,000
# levels took over a minute), by check and by list scanning ./recipes.
mkdir -p recipes
python3 -c "
n = 200000
open('recipes/deep_seq.yaml', 'w').write('kevo: 1\nname: deep\nshapes: ' + '[' * n + ']' * n + '\n')
open('deep_map.yaml', 'w').write('kevo: 1\nparams: ' + '{a: ' * n + '1' + '}' * n + '\n')
open('deep_ok.yaml', 'w').write('kevo: 1\nname: x\nshapes: ' + '[' * 63 + ']' * 63 + '\n')"
t "check deep flow sequences" 2 "$KEVO" check recipes/deep_seq.yaml
has "recipes/deep_seq.yaml:3:72: YAML nested deeper than 64 levels"
t "check deep flow mappings" 2 "$KEVO" check deep_map.yaml
has "deep_map.yaml:2:261: YAML nested deeper than 64 levels"
t "check 64 levels: nesting is not the error" 2 "$KEVO" check deep_ok.yaml; lacks "nested deeper"
t "list with a deep recipe in ./recipes" 0 "$KEVO" list; has "deep_seq"
rm -rf recipes

# A kernel past the compiler's limit is bad input, refused before anything runs.
yes '// padding' | head -c 10000000 >big.cu
t "eval a 10 MB kernel" 2 "$KEVO" eval vector_add big.cu; has "big.cu: larger than 4194304 bytes"
cp big.cu big.py
t "eval a 10 MB Triton kernel" 2 "$KEVO" eval vector_add big.py; has "big.py: larger than"

# Messages: no "flops ? = ?", "= 1 points" or a no-GPU message said twice.
cat >r19.cu <<'CU'
extern "C" __global__ void k(const float *x, float *y) {}
CU
cat >t19.yaml <<'YAML'
kevo: 1
name: t19
params: {N: 64}
inputs: {x: {dtype: f32, shape: [N]}}
outputs: {y: {dtype: f32, shape: [N]}}
cost: {bytes: 8*N}
reference: {lang: cuda, file: r19.cu, launch: 'return {kernels = {{name = "k", grid = {1}, block = {64}, args = {"x", "y"}}}}'}
seeds:
  - {lang: cuda, file: r19.cu, launch: 'return {kernels = {{name = "k", grid = {1}, block = {BLOCK}, args = {"x", "y"}}}}', space: {BLOCK: [64]}}
YAML
t "check: cost without flops" 0 "$KEVO" check t19.yaml
has "cost       bytes 8*N = 512 B (benchmark shape)"; lacks "?"; has "BLOCK {64} = 1 point"
lacks "1 points"
t "eval without a GPU" 1 "$KEVO" eval t19.yaml r19.cu
if grep -q "verdict *no_gpu" "$out"; then
  [ "$(grep -c 'needs a GPU' "$out")" = 1 ] || { echo "FAIL: the no-GPU message is not said once"; sed 's/^/  | /' "$out"; fail=1; }
fi

# a knob value that makes no launch (a block of 0 threads) is bad input for new, check and eval
cat >k18.cu <<'CU'
#ifndef BLOCK
#define BLOCK 256
#endif
/* kevo:launch
return {kernels = {{name = "scale", grid = {cdiv(N, BLOCK)}, block = {BLOCK}, args = {"x", "y", i32(N)}}}}
*/
extern "C" __global__ void scale(const float *x, float *y, int N) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < N) y[i] = 2.0f * x[i];
}
CU
t "new --space BLOCK=0" 2 "$KEVO" new sc k18.cu --param N=4096 --extra N=1 --space BLOCK=0 --out n18
has "with --space BLOCK=0 (at benchmark): cdiv(a, b): b must be > 0, got 0"
[ -e n18/sc.yaml ] && { echo "FAIL: new left n18/sc.yaml"; fail=1; }
t "new --space BLOCK=128,256" 0 "$KEVO" new sc k18.cu --param N=4096 --extra N=1 --space BLOCK=128,256 --out n18
sed 's/BLOCK: \[128, 256\]/BLOCK: [128, 0]/' n18/sc.yaml >n18/sc0.yaml
grep -q "BLOCK: \[128, 0\]" n18/sc0.yaml || { echo "FAIL: the space line moved"; fail=1; }
t "check BLOCK: [128, 0]" 2 "$KEVO" check n18/sc0.yaml
has "n18/sc0.yaml: seeds[0].space: BLOCK=0 makes no launch: at shape N=4096"
has "cdiv(a, b): b must be > 0, got 0"
t "check BLOCK: [128, 256]" 0 "$KEVO" check -q n18/sc.yaml
t "eval a seed of a recipe with BLOCK=0" 2 "$KEVO" eval n18/sc0.yaml n18/sc/seed.cu
has "seeds[0].space: BLOCK=0 makes no launch"
t "eval --set BLOCK=0" 2 "$KEVO" eval n18/sc.yaml n18/sc/seed.cu --set BLOCK=0
has "--set BLOCK=0: the launch chunk makes no launch with this value"
t "eval --set BLOCK=0, not a seed" 2 "$KEVO" eval n18/sc.yaml k18.cu --set BLOCK=0
has "--set BLOCK=0: the launch chunk makes no launch"

# Triton launch options that make no kernel (num_warps 0, not a power of two, past 32;
# num_stages below 1): refused before any compile, naming the option and what it must be
for kv in num_warps=0 num_warps=3 num_warps=64 num_warps=x num_stages=0 num_stages=9; do
  t "eval --set $kv (Triton)" 2 "$KEVO" eval vector_add "$src/vector_add/vector_add.py" --set "$kv"
  has "--set $kv: ${kv%%=*} must be"; has "got '${kv#*=}'"
done
cp -r "$src/vector_add" "$src/vector_add.yaml" .
sed -i 's/num_warps: \[2, 4, 8\]/num_warps: [2, 4, 6]/' vector_add.yaml
grep -q "num_warps: \[2, 4, 6\]" vector_add.yaml || { echo "FAIL: vector_add's space line moved"; fail=1; }
t "check num_warps: [2, 4, 6]" 2 "$KEVO" check vector_add.yaml
has "space: num_warps=6 makes no launch: knob num_warps must be a power of two from 1 to 32"

exit $fail
