#!/usr/bin/env bash
# Needs a GPU. kevo new on examples/own_kernel, then the recipe on a GPU: the seed is judged ok
# against the reference (itself), a kernel that forgets the bias is judged wrong, and
# `kevo run` autotunes the seed's knob space to a verified kernel (exit 0).
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }

cat > probe.lua <<'X'
local ev = assert(require("kevo.evaluator").new{recipe = arg[1]})
local d, err = ev:device()
if not d then io.stderr:write(err, "\n") return 77 end
print(d.name)
return 0
X
if ! dev=$("$KEVO" script probe.lua "$KEVO_SRC/recipes/vector_add.yaml" 2>probe.err); then
  echo "SKIPPED: gpu/test_new needs a GPU and a working kevo worker: $(tail -1 probe.err)" >&2
  exit 77
fi
echo "device: $dev"

"$KEVO" new bias_relu "$KEVO_SRC/examples/own_kernel/bias_relu.cu" --param M=8192 --param N=8192 \
  --shape x=[M,N] --shape bias=[N] --shape y=[M,N] --extra M=1,N=1000 --extra M=37,N=4097 \
  --space BLOCK=128,256,512,1024 >new.log 2>&1 && ok "kevo new" || { bad "kevo new"; cat new.log; }

"$KEVO" eval recipes/bias_relu.yaml recipes/bias_relu/seed.cu --set BLOCK=512 >seed.log 2>&1
rc=$?
if [ $rc = 0 ] && grep -qE "verdict +ok" seed.log; then ok "the seed verifies against the reference"
else bad "the seed: exit $rc"; sed 's/^/  | /' seed.log; fi
grep -E "verdict|speed|time" seed.log | head -5

sed 's/x\[i\] + bias\[i % N\]/x[i]/' "$KEVO_SRC/examples/own_kernel/bias_relu.cu" > nobias.cu
"$KEVO" eval recipes/bias_relu.yaml nobias.cu >nobias.log 2>&1
rc=$?
if [ $rc = 1 ] && grep -qE "verdict +wrong" nobias.log; then ok "a kernel without the bias is wrong"
else bad "the kernel without the bias: exit $rc"; sed 's/^/  | /' nobias.log; fi

"$KEVO" run recipes/bias_relu.yaml --strategy autotune --max-evals 6 --db run.db --out best >run.log 2>&1
rc=$?
if [ $rc = 0 ]; then ok "kevo run autotunes the seed"; else bad "kevo run: exit $rc"; tail -20 run.log; fi
tail -5 run.log
[ $fail = 0 ] && echo "gpu new: all passed"
exit $fail
