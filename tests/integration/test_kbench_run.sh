#!/usr/bin/env bash
# kevo run on an imported KernelBench problem (tests/kbench/relu, from its recorded
# description: no torch, no GPU). The recipe has no seeds, so:
# - without an LLM, kevo run says it needs one and exits 2 (no run is recorded);
# - with --llm openai:canned pointed at a loopback server (canned_llm_server.py) that answers
#   with a correct ReLU kernel in the contract's signature, the run asks the LLM for kernels
#   written from the task, compiles the candidate, and stops with "verification needs a GPU"
#   (exit 1); the archive holds the LLM calls and the candidate; the request the server got
#   carries the exact signature, the tensors and the problem's PyTorch source.
# (tests/gpu/test_kbench_run.sh runs the same on a GPU, to a verified kernel.)
set -u
kevo="${KEVO:?}"
src="${KEVO_SRC:?}"
kb="$src/tests/kbench"
tmp=$(mktemp -d)
srv_pid=
trap '[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
export CUDA_VISIBLE_DEVICES= # the no-GPU path, also on a machine with one
unset KEVO_LLM KEVO_LLM_BASE_URL KEVO_EVALUATOR
export KEVO_LLM_KEY_ENV=KEVO_TEST_NO_SUCH_KEY # no real key goes to the loopback server
export KEVO_DB="$tmp/kevo.db"
cd "$tmp" || exit 1

"$kevo" import "$kb/relu.py" --description "$kb/relu.json" --out "$tmp/r" >/dev/null 2>"$tmp/import.err" \
  || { echo "FAIL import: $(cat "$tmp/import.err")"; exit 1; }
recipe="$tmp/r/relu.yaml"
sig='extern "C" __global__ void relu_kernel(const float *__restrict__ x, float *__restrict__ out, int batch_size, int dim)'

# no LLM: a clear message, exit 2, nothing recorded
"$kevo" run "$recipe" >"$tmp/o0" 2>"$tmp/e0"; rc=$?
if [ $rc -eq 2 ] && grep -q "no seed kernels to tune; configure an LLM (--llm provider:model" "$tmp/e0"; then
  ok "no LLM: exit 2: $(cat "$tmp/e0")"
else
  bad "no LLM: exit $rc: $(cat "$tmp/o0" "$tmp/e0")"
fi
[ ! -e "$KEVO_DB" ] || [ "$(sqlite3 "$KEVO_DB" 'select count(*) from runs' 2>/dev/null)" = 0 ] \
  || bad "no LLM: a run was recorded"

# the canned LLM
python3 "$src/tests/integration/canned_llm_server.py" "$kb/relu_llm_reply.md" "$tmp/requests.jsonl" >"$tmp/port" &
srv_pid=$!
for _ in $(seq 50); do grep -q PORT "$tmp/port" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/^PORT //p' "$tmp/port")
[ -n "$port" ] || { echo "FAIL: the loopback server did not start"; exit 1; }

KEVO_LLM_BASE_URL="http://127.0.0.1:$port/v1" "$kevo" run "$recipe" --llm openai:canned \
  --max-evals 3 --strategy greedy >"$tmp/o1" 2>"$tmp/e1"; rc=$?
if [ $rc -eq 1 ] && grep -q "verification needs a GPU" "$tmp/o1"; then
  ok "with the LLM: exit 1, verification needs a GPU"
else
  bad "with the LLM: exit $rc"; sed 's/^/  | /' "$tmp/o1" "$tmp/e1"
fi
grep -q "compiled 1 candidate(s) here" "$tmp/o1" && ok "the LLM's kernel compiled" \
  || bad "the candidate did not compile: $(cat "$tmp/o1")"
run=$(sed -n 's/^run \([0-9]*\) .*/\1/p' "$tmp/o1" | head -1)

# the archive: the LLM calls, the candidate (origin llm, no parent) and its evaluation
cat >"$tmp/check.lua" <<'LUA'
local archive = require "kevo.archive"
local json = require "kevo.json"
local db = assert(archive.open(arg[1]))
local run = math.tointeger(tonumber(arg[2]))
local calls = db:llm_calls(run)
local cands = db:candidates(run)
assert(#calls >= 1, "no LLM call in the archive")
assert(#cands == 1, #cands .. " candidates, want 1 (the two replies are the same kernel)")
local c = cands[1]
assert(c.origin == "llm", "origin " .. tostring(c.origin))
assert(c.parent == nil or c.parent == json.null, "a kernel written from the task has no parent")
assert(c.source:find('extern "C" __global__ void relu_kernel(', 1, true), "source: " .. c.source)
local evs = db:evaluations(c.id)
assert(#evs == 1 and evs[1].verdict == "no_gpu", "evaluation: " .. tostring(evs[1] and evs[1].verdict))
local r = json.decode(evs[1].result)
assert(r.stage ~= "compile", "stopped at compile: " .. tostring(r.message))
assert(type(r.compile) == "table" and type(r.compile.kernels) == "table"
       and r.compile.kernels[1].name == "relu_kernel", "no compiled relu_kernel in the result")
print(#calls .. " llm call(s), candidate " .. c.id .. " (llm, root), compiled, " .. evs[1].verdict)
LUA
if got=$("$kevo" script "$tmp/check.lua" "$KEVO_DB" "$run" 2>&1); then ok "archive: $got"; else bad "archive: $got"; fi

# what the LLM was asked: the contract's signature, tensors and shapes, the PyTorch forward
cat >"$tmp/req.py" <<'PY'
import json, sys
sig = sys.argv[2]
reqs = [json.loads(l) for l in open(sys.argv[1])]
assert reqs, "the server got no request"
r = reqs[0]
assert r["model"] == "canned", r["model"]
user = [m["content"] for m in r["messages"] if m["role"] == "user"][-1]
need = [sig, "kevo:launch", "input  x: f32 [batch_size, dim]", "output out: f32 [batch_size, dim]",
        "batch_size=64, dim=65537", "```python", "class Model(nn.Module):",
        "def forward(self, x: torch.Tensor) -> torch.Tensor:", "return torch.relu(x)",
        "Write a correct, fast kernel for this operator."]
missing = [s for s in need if s not in user]
assert not missing, "the prompt lacks: %r" % missing
assert "```cuda" not in user, "a prompt written from the task shows no parent kernel"
print("%d request(s); the first carries the signature and the PyTorch forward" % len(reqs))
PY
if got=$(python3 "$tmp/req.py" "$tmp/requests.jsonl" "$sig" 2>&1); then ok "request: $got"; else bad "request: $got"; fi

# a reply with no kernel in it: kevo asks once more, and that prompt says why and what an answer
# must look like (tests/replies/22_no_code.md as the canned reply)
kill "$srv_pid" 2>/dev/null
python3 "$src/tests/integration/canned_llm_server.py" "$src/tests/replies/22_no_code.md" "$tmp/nocode.jsonl" >"$tmp/port2" &
srv_pid=$!
for _ in $(seq 50); do grep -q PORT "$tmp/port2" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/^PORT //p' "$tmp/port2")
KEVO_LLM_BASE_URL="http://127.0.0.1:$port/v1" "$kevo" run "$recipe" --llm openai:canned \
  --max-evals 3 --strategy greedy >"$tmp/o2" 2>"$tmp/e2"
cat >"$tmp/nocode.py" <<'PY'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
user = [[m["content"] for m in r["messages"] if m["role"] == "user"][-1] for r in reqs]
assert len(reqs) == 4, "%d requests, want 2 and 2 more after no reply held a kernel" % len(reqs)
note = "An earlier answer could not be used: E_PARSE: no code block in the reply"
assert not any(note in u for u in user[:2]), "the first prompts carry a note already"
assert all(note in u and "one ```cuda block" in u for u in user[2:]), "the second round lacks the note"
print("2 requests, then 2 that say why the replies were not used")
PY
if got=$(python3 "$tmp/nocode.py" "$tmp/nocode.jsonl" 2>&1); then ok "no kernel in the replies: $got"
else bad "no kernel in the replies: $got"; sed 's/^/  | /' "$tmp/e2"; fi

echo "$fails failure(s)"
[ $fails -eq 0 ]
