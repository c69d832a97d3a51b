#!/usr/bin/env bash
# Every CUDA kernel the GPU tests judge on the KernelBench problems compiles against its
# imported recipe, so that a GPU run cannot fail on a typo (no torch, no GPU: the recipes come
# from the recorded descriptions, tests/kbench/*.json):
# - tests/gpu/kbench_kernels/P_ok.cu and P_wrong.cu (test_kbench.sh judges them with kevo eval);
# - the canned LLM replies tests/kbench/P_llm_reply.md (test_kbench_run.sh serves them to
#   kevo run), taken out of the reply by kevo.extract as kevo run does.
# For each: the source carries the contract's exact signature and launch arguments (from the
# imported README.md, whitespace aside), and `kevo eval --json` compiles it, runs its launch
# chunk and stops at verdict no_gpu, stage verify, with the kernel P_kernel compiled.
set -u
kevo="${KEVO:?}"
src="${KEVO_SRC:?}"
kb="$src/tests/kbench"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
export CUDA_VISIBLE_DEVICES= # the no-GPU path, also on a machine with one
unset KEVO_EVALUATOR
export KEVO_DB="$tmp/kevo.db"
cd "$tmp" || exit 1

cat >"$tmp/extract.lua" <<'LUA'
-- the CUDA source kevo run would take out of a canned reply (arg[1]) -> arg[2]
local extract = require "kevo.extract"
local f = assert(io.open(arg[1], "rb"))
local text = f:read("a")
f:close()
local cands, msg = extract.candidates(text)
assert(cands, msg)
assert(#cands == 1 and cands[1].lang == "cuda", #cands .. " candidates, want one CUDA kernel")
local o = assert(io.open(arg[2], "wb"))
o:write(cands[1].source)
o:close()
LUA
cat >"$tmp/contract.py" <<'PY'
import json, re, sys
# contract.py README SOURCE KERNEL EVAL_JSON: the signature and launch arguments of the contract
# are in the source (whitespace aside), and kevo eval compiled it and stopped for want of a GPU
readme, source, kernel, res = sys.argv[1:5]
flat = lambda s: re.sub(r"\s+", "", s)
contract, src = open(readme).read(), flat(open(source).read())
sig = re.search(r'extern "C" __global__ void \w+\([^)]*\)', contract).group(0)
args = re.search(r"args = \{.*\}\}\}\}", contract).group(0)[:-3]
assert flat(sig) in src, "the source lacks the signature " + sig
assert flat(args) in src, "the source lacks the launch arguments " + args
r = json.loads(open(res).read())
names = [k["name"] for k in (r.get("compile") or {}).get("kernels", [])]
assert r.get("verdict") == "no_gpu" and r.get("stage") == "verify", \
    "verdict %s at stage %s: %s" % (r.get("verdict"), r.get("stage"), r.get("message"))
assert names == [kernel], "compiled %r, want [%r]" % (names, kernel)
assert not (r["compile"].get("diagnostics") or []), "diagnostics: %r" % r["compile"]["diagnostics"]
print("%s compiled (%d registers), no_gpu at verify" % (kernel, r["compile"]["kernels"][0]["registers"]))
PY

check_kernel() { # problem label source
  local p=$1 what=$2 cu=$3
  "$kevo" eval "$tmp/r/$p.yaml" "$cu" --json >"$tmp/eval.json" 2>"$tmp/eval.err"
  if got=$(python3 "$tmp/contract.py" "$tmp/r/$p/README.md" "$cu" "${p}_kernel" "$tmp/eval.json" 2>&1); then
    ok "$what: $got"
  else
    bad "$what: $(echo "$got" | tail -1) $(head -c 300 "$tmp/eval.err")"
  fi
}

problems="relu sum_dim matmul conv2d linear_relu"
for p in $problems; do
  "$kevo" import "$kb/$p.py" --description "$kb/$p.json" --out "$tmp/r" >/dev/null 2>"$tmp/import.err" \
    || { bad "import $p: $(cat "$tmp/import.err")"; continue; }
done

n=0
for cu in "$src"/tests/gpu/kbench_kernels/*.cu; do
  base=$(basename "$cu" .cu)
  p=${base%_*}
  case " $problems " in *" $p "*) ;; *) bad "$base.cu: no problem '$p' in tests/kbench"; continue ;; esac
  case "${base##*_}" in ok | wrong) ;; *) bad "$base.cu: the name must end in _ok or _wrong"; continue ;; esac
  check_kernel "$p" "kbench_kernels/$base.cu" "$cu"
  n=$((n + 1))
done
for p in $problems; do
  [ -e "$src/tests/gpu/kbench_kernels/${p}_ok.cu" ] || bad "no kbench_kernels/${p}_ok.cu for $p"
done

for reply in "$kb"/*_llm_reply.md; do
  p=$(basename "$reply" _llm_reply.md)
  case " $problems " in *" $p "*) ;; *) bad "$p: a canned reply for no problem"; continue ;; esac
  if ! got=$("$kevo" script "$tmp/extract.lua" "$reply" "$tmp/$p.cu" 2>&1); then
    bad "${p}_llm_reply.md: $got"
    continue
  fi
  check_kernel "$p" "${p}_llm_reply.md" "$tmp/$p.cu"
  n=$((n + 1))
done
for p in $problems; do
  [ -e "$kb/${p}_llm_reply.md" ] || bad "no canned reply ${p}_llm_reply.md for $p"
done

# the check can fail: a kernel whose launch names a wrong tensor does not reach verify
sed 's/"A", "B", "out"/"A", "Bt", "out"/' "$src/tests/gpu/kbench_kernels/matmul_ok.cu" >"$tmp/typo.cu"
"$kevo" eval "$tmp/r/matmul.yaml" "$tmp/typo.cu" --json >"$tmp/eval.json" 2>/dev/null
if python3 "$tmp/contract.py" "$tmp/r/matmul/README.md" "$tmp/typo.cu" matmul_kernel "$tmp/eval.json" >/dev/null 2>&1; then
  bad "a launch naming no tensor passed the check"
else
  ok "a launch naming no tensor fails the check"
fi

echo "$n kernel(s) checked, $fails failure(s)"
[ $fails -eq 0 ]
