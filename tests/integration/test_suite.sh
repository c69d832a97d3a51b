#!/usr/bin/env bash
# kevo suite on the synthetic cost model (KEVO_EVALUATOR=model:..., no GPU): usage errors, a
# suite of three recipes with its table, JSON and report page, a suite killed inside a
# problem's search and one killed between problems, each resumed to the same results as an
# uninterrupted suite, and a KernelBench problem that cannot be imported (no torch) failing
# alone while the rest of the suite goes on.
set -u
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fix="$KEVO_SRC/tests/integration/run_fixtures"
export KEVO_EVALUATOR="model:$KEVO_SRC/examples/cost_model.lua"
unset KEVO_FAULT KEVO_LLM KEVO_WORKER
cd "$tmp"
out="$tmp/out.txt"
t() { # t NAME EXPECTED_RC CMD...
  local name=$1 want=$2; shift 2
  "$@" >"$out" 2>&1; local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, want $want"; sed 's/^/  | /' "$out"; fail=1
  else echo "ok   $name"; fi
}
has() { grep -q -- "$1" "$out" || { echo "FAIL: output lacks '$1'"; sed 's/^/  | /' "$out"; fail=1; }; }
# each problem's run, as dump_run.lua sees it (origin, knobs, source, verdict), in suite order
dumps() {
  "$KEVO" script <(cat <<'LUA'
local db = require("kevo.archive").open(arg[1], {readonly = true})
local json = require "kevo.json"
local by = {}
for _, r in ipairs(db:runs()) do
  local c = json.decode(r.config)
  if type(c.suite) == "table" then by[c.suite.index] = r.id end
end
for i = 1, 3 do print("problem " .. i .. " run " .. tostring(by[i] ~= nil)) ; io.stdout:flush()
  os.execute(("%q script %q %q %d"):format(arg[2], arg[3], arg[1], by[i] or 0))
end
LUA
) "$1" "$KEVO" "$fix/dump_run.lua" | grep -v "^status"
}
p3=("$fix/toyscale.yaml" softmax vector_add)

t "no problems is usage" 2 "$KEVO" suite;                          has "which problems"
t "unknown option" 2 "$KEVO" suite softmax --frob 1;               has "unknown option"
t "an empty folder" 2 "$KEVO" suite "$tmp";                        has "holds no recipe"
t "--resume takes no paths" 2 "$KEVO" suite --resume 1 softmax;    has "drop 'softmax'"
t "--resume takes no --strategy" 2 "$KEVO" suite --resume 1 --strategy greedy
t "--eval refuses KernelBench problems" 2 "$KEVO" suite x.py softmax --eval redis://127.0.0.1:9/0 \
  --db refused.db
has "x.py: a KernelBench problem (a PyTorch reference) is not evaluated through Redis"

t "a suite of three" 0 "$KEVO" suite "${p3[@]}" --max-evals 6 --db a.db --json a.json
has "suite 1 (done): 3 problems"; has "fast_1.5"; has "geometric mean speed-up"
grep -qE '^1 +toyscale +2 done +6 +6 ' "$out" || { echo "FAIL: no line for toyscale"; fail=1; }
python3 - a.json <<'PY' || { echo "FAIL: the JSON"; cat a.json; fail=1; }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["suite"]["problems"] == 3 and len(d["problems"]) == 3, d["suite"]
assert d["fast_p"]["reference"]["fast_0"] == {"n": 3, "of": 3, "share": 1}, d["fast_p"]
assert all(p["verified"] == 6 and p["speedup"] > 0 for p in d["problems"])
PY
t "kevo report on the suite" 0 "$KEVO" report 1 --db a.db --html a.html
has "suite 1 (done): 3 problems"
grep -q "<h2>fast_p</h2>" a.html || { echo "FAIL: no suite page"; fail=1; }
t "kevo run --resume refuses a suite" 2 "$KEVO" run --resume 1 --db a.db; has "is a suite"
t "kevo suite --resume refuses a run" 2 "$KEVO" suite --resume 2 --db a.db; has "is not a suite"
dumps a.db > a.txt

# killed inside the first problem's search, resumed: the same searches
t "killed in a problem" 137 env KEVO_FAULT=committed:2 "$KEVO" suite "${p3[@]}" --max-evals 6 --db b.db
t "resumed" 0 "$KEVO" suite --resume 1 --db b.db;                   has "suite 1 (done): 3 problems"
dumps b.db > b.txt
diff a.txt b.txt >/dev/null && echo "ok   resumed inside a problem: the same searches" \
  || { echo "FAIL: the resumed suite differs"; diff a.txt b.txt | head; fail=1; }
# killed between problems (after the second is noted), resumed: the first two read back
t "killed between problems" 137 env KEVO_FAULT=suite:2 "$KEVO" suite "${p3[@]}" --max-evals 6 --db c.db
t "resumed again" 0 "$KEVO" suite --resume 1 --db c.db
[ "$("$KEVO" runs --db c.db | grep -c autotune)" = 3 ] \
  || { echo "FAIL: a noted problem was searched again"; "$KEVO" runs --db c.db; fail=1; }
dumps c.db > c.txt
diff a.txt c.txt >/dev/null && echo "ok   resumed between problems: the same searches" \
  || { echo "FAIL: the resumed suite differs"; diff a.txt c.txt | head; fail=1; }

# a folder: its recipes by name; a problem file that cannot be imported fails alone
mkdir probs
cp "$fix/toyscale.yaml" probs/a_toy.yaml; cp -r "$fix/toyscale" probs/
printf 'import torch\nclass Model: pass\n' > probs/b_bad.py
t "a folder with a bad problem" 0 env KEVO_PYTHON=/bin/false "$KEVO" suite probs --max-evals 4 --db d.db
grep -qE '^1 +a_toy|^1 +toyscale' "$out" && grep -qE '^2 +b_bad.py +- failed' "$out" \
  || { echo "FAIL: folder lines"; sed 's/^/  | /' "$out"; fail=1; }

[ $fail = 0 ] && echo "suite: all passed"
exit $fail
