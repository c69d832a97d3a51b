#!/usr/bin/env bash
# kevo run with a language model: LLM strategies against a real loopback HTTP server
# (run_llm_server.py, rewrites scripted from the prompt) and the synthetic cost model.
# Checks: LLM candidates in the archive with parent links, faster kernels found, the token
# budget stops a run, the same seed replays the same run, beam+autotune runs both parts.
set -u
fail=0
tmp=$(mktemp -d)
srv_pid=
trap '[ -n "$srv_pid" ] && kill $srv_pid 2>/dev/null; rm -rf "$tmp"' EXIT
fix="$KEVO_SRC/tests/integration/run_fixtures"
recipe="$fix/toyscale.yaml"
export KEVO_EVALUATOR="model:$KEVO_SRC/examples/cost_model.lua"
export KEVO_DB="$tmp/kevo.db"
unset KEVO_LLM KEVO_LLM_BASE_URL KEVO_LLM_KEY_ENV
cd "$tmp"
if ! "$KEVO" script <(echo 'require "kevo.archive"; require "kevo.recipe"; require "kevo.llm"') 2>/dev/null; then
  echo "SKIP: this build lacks kevo.archive, kevo.recipe or kevo.llm, which this test needs" >&2; exit 77
fi
python3 "$KEVO_SRC/tests/integration/run_llm_server.py" > port.txt &
srv_pid=$!
for _ in $(seq 50); do grep -q PORT port.txt 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/^PORT //p' port.txt)
[ -n "$port" ] || { echo "FAIL: the loopback server did not start"; exit 1; }
printf 'llm.base_url = http://127.0.0.1:%s/v1\nllm.native_n = true\nllm.log = false\n' "$port" > kevo.conf

out="$tmp/out.txt"
t() { # t NAME EXPECTED_RC CMD...
  local name=$1 want=$2; shift 2
  "$@" >"$out" 2>&1; local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, want $want"; sed 's/^/  | /' "$out"; fail=1
  else echo "ok   $name"; fi
}
has() { grep -q -- "$1" "$out" || { echo "FAIL: output lacks '$1'"; sed 's/^/  | /' "$out"; fail=1; }; }
run_id() { sed -n 's/^run \([0-9]*\) .*/\1/p' "$out" | head -1; }
dump() { "$KEVO" script "$fix/dump_run.lua" "$KEVO_DB" "$1"; }
speedup() { sed -n 's/^best: candidate [0-9]*, \([0-9.]*\)x.*/\1/p' "$out"; }

t "bad --llm" 2 "$KEVO" run "$recipe" --llm nocolon;                              has "PROVIDER:MODEL"
for s in greedy beam uct evolve; do
  t "llm strategy $s" 0 "$KEVO" run "$recipe" --llm vllm:rewriter --strategy $s --max-evals 24
  has "tokens"
  dump "$(run_id)" > d.txt || { echo "FAIL: $s: archive/parent links"; cat d.txt; fail=1; }
  grep -q "^cand llm .* child$" d.txt || { echo "FAIL: $s: no LLM candidate with a parent"; fail=1; }
  grep -q "^cand llm .* compile_error child$" d.txt || { echo "FAIL: $s: no broken rewrite seen"; fail=1; }
  # the rewrites beat their parents: the best kernel is one of them
  grep -q "kevo-model: speed=" "kevo-out/$(run_id)/best.cu" \
    || { echo "FAIL: $s: the best kernel ($(speedup)x) is no LLM rewrite"; fail=1; }
done

t "greedy is the default with an LLM" 0 "$KEVO" run "$recipe" --llm vllm:rewriter --max-evals 12
has "greedy on toyscale"
dump "$(run_id)" > g1.txt
t "same seed, same LLM run" 0 "$KEVO" run "$recipe" --llm vllm:rewriter --max-evals 12
dump "$(run_id)" > g2.txt
cmp -s g1.txt g2.txt && echo "ok   same archive" || { echo "FAIL: LLM run not replayed"; diff g1.txt g2.txt | head; fail=1; }

t "token budget stops the LLM" 0 "$KEVO" run "$recipe" --llm vllm:rewriter --strategy greedy \
  --set steps=1000 --budget-tokens 3000
has "\[tokens\]"
# a budget smaller than one call: the summary says why no call was made
t "token budget smaller than one call" 0 "$KEVO" run "$recipe" --llm vllm:rewriter --strategy greedy \
  --budget-tokens 100
has "0 tokens, .* \[tokens\]"; has "^stopped: token budget: 0 of 100 tokens used, this call may need [0-9]* tokens$"

t "beam+autotune with an LLM" 0 "$KEVO" run "$recipe" --llm vllm:rewriter --strategy beam+autotune \
  --max-evals 40 --set beam.rounds=100
dump "$(run_id)" > c.txt
grep -q "^cand llm " c.txt && grep -q "^cand tune " c.txt && echo "ok   both parts ran" \
  || { echo "FAIL: composition parts"; cat c.txt; fail=1; }
t "tokens spent, then autotune goes on" 0 "$KEVO" run "$recipe" --llm vllm:rewriter \
  --strategy beam+autotune --budget-tokens 4000 --set beam.rounds=100 --max-evals 60
dump "$(run_id)" > c2.txt
grep -q "^cand tune " c2.txt && echo "ok   autotune after the token budget" \
  || { echo "FAIL: autotune did not run after the token budget"; sed 's/^/  | /' "$out"; fail=1; }

[ $fail = 0 ] && echo "run_llm: all passed"
exit $fail
