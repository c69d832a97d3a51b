#!/usr/bin/env bash
# GPU test: kevo run on imported KernelBench problems, end to end, with "the LLM" writing the
# kernel, for each kind of problem of tests/kbench: elementwise (relu), reduction (sum_dim),
# matmul, convolution (conv2d), a fused sequence (linear_relu). Each is imported with real torch
# (kevo import); a loopback OpenAI-style server (tests/integration/canned_llm_server.py) answers
# every prompt with a correct CUDA kernel in the contract's signature (tests/kbench/P_llm_reply.md);
# then
#   kevo run P.yaml --llm openai:canned --max-evals 3 --strategy greedy
# must exit 0 with a verified kernel written by the LLM and the summary line
# "vs PyTorch: N.NNx eager (T ms), N.NNx torch.compile (T ms)". A canned wrong kernel (ReLU
# without its clamp) must be judged wrong against the PyTorch reference (exit 1, no verified
# kernel). One torch.compile baseline per problem (the run's); the wrong run times nothing.
# Needs a GPU and python3 with torch: exits 77 (skipped) without them.
# env: KEVO (the binary), KEVO_SRC (the source tree), KEVO_PYTHON (optional: the python
# with torch, default python3; the older KEVO_TORCH_PYTHON is read too)
set -u
here="$(cd "$(dirname "$0")" && pwd)"
src="${KEVO_SRC:-$here/../..}"
kevo="${KEVO:?KEVO must name kevo}"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: test_kbench_run needs an NVIDIA GPU and there is none here" >&2
  exit 77
fi
# the python with torch: KEVO_PYTHON (kevo's variable), or the older KEVO_TORCH_PYTHON when a
# set-up still names it (it wins here: it can only mean torch's python)
py="${KEVO_TORCH_PYTHON:-${KEVO_PYTHON:-python3}}"
if ! "$py" -c "import torch" >/dev/null 2>&1; then
  echo "SKIPPED: test_kbench_run needs python3 with torch (set KEVO_PYTHON)" >&2
  exit 77
fi
export KEVO_PYTHON="$py"
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
torch_version=$("$py" -c 'import torch; print(torch.__version__)')

start_server() { # reply_file log_file -> sets port and server (its pid)
  python3 "$src/tests/integration/canned_llm_server.py" "$1" "$2" >"$2.port" &
  server=$!
  pids+=($server)
  port=
  for _ in $(seq 100); do grep -q PORT "$2.port" 2>/dev/null && break; sleep 0.1; done
  port=$(sed -n 's/^PORT //p' "$2.port")
  [ -n "$port" ] || { echo "FAIL: the loopback LLM server did not start"; exit 1; }
}

check_lua="$tmp/check.lua"
cat >"$check_lua" <<'LUA'
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

# For each problem: import with real torch; the canned reply tests/kbench/P_llm_reply.md (a
# correct kernel in the contract, checked to compile by tests/integration/test_kbench_kernels.sh)
# is "the LLM"; kevo run must verify it against PyTorch and time it against eager and
# torch.compile (one torch.compile per problem: the run's baseline).
for p in relu sum_dim matmul conv2d linear_relu; do
  t0=$SECONDS
  echo "== $p"
  if ! "$kevo" import "$kb/$p.py" --out "$tmp/r" >"$tmp/import.out" 2>&1; then
    bad "kevo import $p.py:"; sed 's/^/  | /' "$tmp/import.out"; continue
  fi
  ok "kevo import $p.py (torch $torch_version)"
  # the contract's signature, less 'extern "C" __global__ void' (a request's JSON escapes quotes)
  sig=$(grep -m1 'extern "C" __global__ void' "$tmp/r/$p/README.md" | sed 's/.*__global__ void //')
  case "$sig" in "${p}_kernel("*")") ;; *) bad "$p: no signature in the imported contract: '$sig'"; continue ;; esac

  start_server "$kb/${p}_llm_reply.md" "$tmp/$p.jsonl"
  KEVO_LLM_BASE_URL="http://127.0.0.1:$port/v1" "$kevo" run "$tmp/r/$p.yaml" --llm openai:canned \
    --max-evals 3 --strategy greedy --out "$tmp/out" >"$tmp/run.out" 2>"$tmp/run.err"; rc=$?
  kill "$server" 2>/dev/null
  sed 's/^/  | /' "$tmp/run.out"
  if [ $rc -eq 0 ]; then ok "$p: kevo run exit 0"; else bad "$p: kevo run exit $rc"; sed 's/^/  ! /' "$tmp/run.err"; fi
  if grep -q "warning: the GPU worker" "$tmp/run.err"; then bad "$p: $(grep 'GPU worker' "$tmp/run.err")"; fi
  run=$(sed -n 's/^run \([0-9]*\) .*/\1/p' "$tmp/run.out" | head -1)
  grep -qE "^run [0-9]+ done: greedy on $p: [0-9]+ evaluations, [1-9][0-9]* verified" "$tmp/run.out" \
    && ok "$p: a verified kernel" || bad "$p: no verified kernel in the summary"
  if grep -qE "^  vs PyTorch: [0-9]+\.[0-9]+x eager \([0-9.e+-]+ ms\), [0-9]+\.[0-9]+x torch\.compile \([0-9.e+-]+ ms\)" "$tmp/run.out"; then
    ok "$p: summary: $(grep 'vs PyTorch' "$tmp/run.out" | sed 's/^ *//')"
  else
    bad "$p: summary lacks 'vs PyTorch: N.NNx eager (T ms), N.NNx torch.compile (T ms)'"
  fi
  best="$tmp/out/$run/best.cu"
  if [ -n "$run" ] && grep -qF "${p}_kernel(" "$best" 2>/dev/null; then ok "$p: best kernel written: best.cu"; else bad "$p: no best.cu for run '$run'"; fi
  if got=$("$kevo" script "$check_lua" "$KEVO_DB" "$run" 2>&1); then ok "$p: archive: $got"; else bad "$p: archive: $got"; fi
  req=$(head -1 "$tmp/$p.jsonl" 2>/dev/null)
  case "$req" in
    *"$sig"*"class Model(nn.Module):"*"def forward(self"*) ok "$p: the prompt carried the signature and the PyTorch forward" ;;
    *) bad "$p: the first request lacks the signature or the forward: ${req:0:300}" ;;
  esac
  [ "$p" != relu ] || case "$req" in *"return torch.relu(x)"*) ;; *) bad "relu: the prompt lacks the forward's body" ;; esac
  echo "   ($p: $((SECONDS - t0)) s)"
done

# a canned wrong kernel (no clamp: out = x) is judged wrong against the PyTorch reference
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
