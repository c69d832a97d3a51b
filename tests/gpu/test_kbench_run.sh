#!/usr/bin/env bash
# GPU test: kevo run on an imported KernelBench problem, end to end, with "the LLM" writing the
# kernel. tests/kbench/relu.py is imported with real torch (kevo import); a loopback
# OpenAI-style server (tests/integration/canned_llm_server.py) answers every prompt with a
# correct CUDA ReLU in the contract's signature (tests/kbench/relu_llm_reply.md); then
#   kevo run relu.yaml --llm openai:canned --max-evals 3 --strategy greedy
# must exit 0 with a verified kernel written by the LLM and the summary line
# "vs PyTorch: N.NNx eager (T ms), N.NNx torch.compile (T ms)". A canned wrong kernel (no
# clamp) must be judged wrong against the PyTorch reference (exit 1, no verified kernel).
# Needs a GPU and python3 with torch: exits 77 (skipped) without them.
# env: KEVO (the binary), KEVO_SRC (the source tree), KEVO_TORCH_PYTHON (optional: the python
# with torch, default python3)
set -u
here="$(cd "$(dirname "$0")" && pwd)"
src="${KEVO_SRC:-$here/../..}"
kevo="${KEVO:?KEVO must name kevo}"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: test_kbench_run needs an NVIDIA GPU and there is none here" >&2
  exit 77
fi
py="${KEVO_TORCH_PYTHON:-python3}"
if ! "$py" -c "import torch" >/dev/null 2>&1; then
  echo "SKIPPED: test_kbench_run needs python3 with torch (set KEVO_TORCH_PYTHON)" >&2
  exit 77
fi
export KEVO_TORCH_PYTHON="$py"
unset KEVO_LLM KEVO_LLM_BASE_URL KEVO_EVALUATOR
export KEVO_LLM_KEY_ENV=KEVO_TEST_NO_SUCH_KEY # no real key goes to the loopback server
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
export KEVO_DB="$tmp/kevo.db"
cd "$tmp" || exit 1
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
kb="$src/tests/kbench"
sig='extern "C" __global__ void relu_kernel(const float *__restrict__ x, float *__restrict__ out, int batch_size, int dim)'

start_server() { # reply_file log_file -> sets port
  python3 "$src/tests/integration/canned_llm_server.py" "$1" "$2" >"$2.port" &
  pids+=($!)
  port=
  for _ in $(seq 100); do grep -q PORT "$2.port" 2>/dev/null && break; sleep 0.1; done
  port=$(sed -n 's/^PORT //p' "$2.port")
  [ -n "$port" ] || { echo "FAIL: the loopback LLM server did not start"; exit 1; }
}

# 1. import with real torch
if "$kevo" import "$kb/relu.py" --out "$tmp/r" >"$tmp/import.out" 2>&1; then
  ok "kevo import relu.py (torch $("$py" -c 'import torch; print(torch.__version__)'))"
else
  echo "FAIL kevo import relu.py:"; sed 's/^/  | /' "$tmp/import.out"; exit 1
fi
grep -qF "$sig" "$tmp/r/relu.yaml" || bad "the imported contract lacks the signature the canned kernel has"

# 2. the canned correct kernel: verified, timed against eager and torch.compile
start_server "$kb/relu_llm_reply.md" "$tmp/good.jsonl"
echo "kevo run relu.yaml --llm openai:canned --max-evals 3 --strategy greedy"
KEVO_LLM_BASE_URL="http://127.0.0.1:$port/v1" "$kevo" run "$tmp/r/relu.yaml" --llm openai:canned \
  --max-evals 3 --strategy greedy --out "$tmp/out" >"$tmp/run.out" 2>"$tmp/run.err"; rc=$?
sed 's/^/  | /' "$tmp/run.out"
if [ $rc -eq 0 ]; then ok "kevo run: exit 0"; else bad "kevo run: exit $rc"; sed 's/^/  ! /' "$tmp/run.err"; fi
run=$(sed -n 's/^run \([0-9]*\) .*/\1/p' "$tmp/run.out" | head -1)
grep -qE "^run [0-9]+ done: greedy on relu: [0-9]+ evaluations, [1-9][0-9]* verified" "$tmp/run.out" \
  && ok "a verified kernel" || bad "no verified kernel in the summary"
if grep -qE "^  vs PyTorch: [0-9]+\.[0-9]+x eager \([0-9.e+-]+ ms\), [0-9]+\.[0-9]+x torch\.compile \([0-9.e+-]+ ms\)" "$tmp/run.out"; then
  ok "summary: $(grep 'vs PyTorch' "$tmp/run.out" | sed 's/^ *//')"
else
  bad "summary lacks 'vs PyTorch: N.NNx eager (T ms), N.NNx torch.compile (T ms)'"
fi
best="$tmp/out/$run/best.cu"
if [ -n "$run" ] && grep -qF 'relu_kernel(' "$best" 2>/dev/null; then ok "best kernel written: best.cu"; else bad "no best.cu for run '$run'"; fi
cat >"$tmp/check.lua" <<'LUA'
local archive = require "kevo.archive"
local json = require "kevo.json"
local db = assert(archive.open(arg[1]))
local run = math.tointeger(tonumber(arg[2]))
local calls, cands = db:llm_calls(run), db:candidates(run)
assert(#calls >= 1, "no LLM call in the archive")
local okc
for _, c in ipairs(cands) do
  local ev = db:evaluations(c.id)[1]
  if ev and ev.verdict == "ok" then okc = {c = c, r = json.decode(ev.result)} end
end
assert(okc, "no candidate verified ok")
assert(okc.c.origin == "llm", "the verified kernel's origin is " .. tostring(okc.c.origin))
local b = okc.r.bench or {}
assert((b.median_ms or 0) > 0 and (b.eager_ms or 0) > 0, "the result has no kernel or eager time")
print(string.format("%d llm call(s), %d candidate(s); the LLM's kernel: %.4g ms, eager %.4g ms, "
  .. "torch.compile %s ms", #calls, #cands, b.median_ms, b.eager_ms, tostring(b.compiled_ms)))
LUA
if got=$("$kevo" script "$tmp/check.lua" "$KEVO_DB" "$run" 2>&1); then ok "archive: $got"; else bad "archive: $got"; fi
req=$(head -1 "$tmp/good.jsonl" 2>/dev/null)
case "$req" in
  *"relu_kernel(const float *__restrict__ x, float *__restrict__ out, int batch_size, int dim)"*"return torch.relu(x)"*)
    ok "the prompt carried the signature and the PyTorch forward" ;;
  *) bad "the first request lacks the signature or the forward: ${req:0:300}" ;;
esac

# 3. a canned wrong kernel (no clamp: out = x) is judged wrong against the PyTorch reference
sed 's/out\[i\] = v < 0.0f ? 0.0f : v;/out[i] = v;/' "$kb/relu_llm_reply.md" >"$tmp/wrong.md"
grep -q 'out\[i\] = v;' "$tmp/wrong.md" || { bad "could not make the wrong kernel"; }
start_server "$tmp/wrong.md" "$tmp/wrong.jsonl"
KEVO_LLM_BASE_URL="http://127.0.0.1:$port/v1" "$kevo" run "$tmp/r/relu.yaml" --llm openai:canned \
  --max-evals 2 --strategy greedy --set steps=1 --out "$tmp/out" >"$tmp/wrong.out" 2>"$tmp/wrong.err"; rc=$?
if [ $rc -eq 1 ] && grep -q "no verified kernel" "$tmp/wrong.out" && grep -qE "[0-9]+ wrong" "$tmp/wrong.out"; then
  ok "a wrong kernel: exit 1, judged wrong"
else
  bad "a wrong kernel: exit $rc"; sed 's/^/  | /' "$tmp/wrong.out" "$tmp/wrong.err"
fi

echo "$fails failure(s)"
[ $fails -eq 0 ]
