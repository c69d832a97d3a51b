#!/usr/bin/env bash
# The profile stage end to end without a GPU: the fake worker (tests/integration/fake_worker.py)
# answers profile requests with the metric sets recorded on an H200 (tests/fixtures/ncu/), a
# loopback LLM replays a fixed script of replies (canned_llm_server.py: a bank-conflict kernel,
# a register-limited one, an uncoalesced one, one bound by its FMA pipe, a copy), and the strategy
# tests/fixtures/profile/profile_walk.lua profiles each kernel before asking for its rewrite.
# Each prompt must name the bottleneck of the kernel before it (first in its ranked diagnosis);
# kevo eval --profile prints the
# readings; a host without ncu says why and the run goes on. (bench/profile.sh does the same on
# the GPU host with metric sets it has just measured.)
set -u
kevo="${KEVO:?}"
src="${KEVO_SRC:?}"
fix="$src/tests/fixtures/profile"
rec="${PROFILE_REPLY:-$src/tests/fixtures/ncu/known_h200.json}"
if [ ! -f "$rec" ]; then
  echo "SKIPPED: no recorded metric sets at $rec (tests/gpu/test_profile.sh records them)" >&2
  exit 77
fi
tmp=$(mktemp -d)
srv_pid=
trap '[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
export KEVO_WORKER="python3 $src/tests/integration/fake_worker.py ok"
cd "$tmp" || exit 1

# kevo eval --profile: the readings, the diagnosis in the feedback, the JSON
KEVO_FAKE_PROFILE="$rec" "$kevo" eval "$fix/known.yaml" "$fix/known/copy.cu" --profile >eval.txt 2>&1
if grep -q "DRAM throughput (% peak)" eval.txt && grep -q "memory-bound at" eval.txt; then
  ok "kevo eval --profile prints the readings and the diagnosis"
else
  bad "kevo eval --profile"; sed 's/^/  | /' eval.txt
fi
KEVO_FAKE_PROFILE="$rec" "$kevo" eval "$fix/known.yaml" "$fix/known/copy.cu" --profile --json >eval.json 2>/dev/null
python3 - eval.json <<'PY' && ok "--json: profile with candidate, reference and diagnosis" || bad "--json profile"
import json, sys
r = json.load(open(sys.argv[1]))
p = r["profile"]
assert p["ok"] and p["candidate"]["dram_pct"] > 50 and "reference" in p, p
assert p["diagnosis"][0]["kind"] == "dram_peak", p["diagnosis"]
assert "Hardware profile" in r["feedback"], r["feedback"]
PY
"$kevo" eval "$fix/known.yaml" "$fix/known/copy.cu" --profile >none.txt 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "profile: none: Nsight Compute (ncu) is not installed here" none.txt; then
  ok "no ncu: the evaluation stands, the profile says why"
else
  bad "no ncu (exit $rc)"; sed 's/^/  | /' none.txt
fi

# the loopback LLM and the strategy that profiles
mkdir -p strategies && cp "$fix/profile_walk.lua" strategies/
r="$fix/replies"
python3 "$src/tests/integration/canned_llm_server.py" \
  "$r/1_bank.md,$r/2_registers.md,$r/3_uncoalesced.md,$r/4_fma.md,$r/5_copy.md" requests.jsonl \
  >port &
srv_pid=$!
for _ in $(seq 100); do grep -q PORT port 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/^PORT //p' port)
[ -n "$port" ] || { echo "FAIL: the loopback server did not start"; exit 1; }
KEVO_FAKE_PROFILE="$rec" KEVO_LLM_BASE_URL="http://127.0.0.1:$port/v1" "$kevo" run \
  "$fix/known.yaml" --llm openai:canned --strategy profile_walk --max-evals 40 >run.txt 2>&1; rc=$?
[ $rc -eq 0 ] && ok "kevo run with ctx:profile: exit 0" || { bad "kevo run exit $rc"; sed 's/^/  | /' run.txt; }
python3 - requests.jsonl <<'PY' && ok "each prompt names the bottleneck of the kernel before it" || bad "prompts"
import json, sys
want = ["memory-bound at", "bank conflicts", "registers per thread", "uncoalesced global loads",
        "compute-bound on the FMA pipe", "memory-bound at"]
reqs = [json.loads(l) for l in open(sys.argv[1])]
users = [[m["content"] for m in r["messages"] if m["role"] == "user"][-1] for r in reqs]
assert len(users) == 6, "%d prompts, want 6" % len(users)
for i, (u, w) in enumerate(zip(users, want)):
    at = u.find("Hardware profile")
    assert at >= 0, "prompt %d has no profile" % (i + 1)
    top = u[at:].split("\n")[1:2]  # the first finding of the ranked diagnosis
    print("  prompt %d: %s" % (i + 1, top[0][:110]))
    assert any(w in t for t in top), "prompt %d: want %r in %r" % (i + 1, w, top)
PY
exit $((fails > 0))
