#!/usr/bin/env bash
# kevo run end to end on the synthetic cost model (KEVO_EVALUATOR=model:..., no GPU): usage
# errors, every strategy, budgets, archive contents and parent links, determinism, user
# strategies by path (sandboxed), composition, Ctrl-C.
set -u
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fix="$KEVO_SRC/tests/integration/run_fixtures"
recipe="$fix/toyscale.yaml"
export KEVO_EVALUATOR="model:$KEVO_SRC/examples/cost_model.lua"
export KEVO_DB="$tmp/kevo.db"
cd "$tmp"
if ! "$KEVO" script <(echo 'require "kevo.archive"; require "kevo.recipe"') 2>/dev/null; then
  echo "SKIP: this build lacks kevo.archive or kevo.recipe, which kevo run needs" >&2; exit 77
fi
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

t "no recipe is usage" 2 "$KEVO" run;                                       has "recipe is required"
t "unknown option" 2 "$KEVO" run "$recipe" --frob;                          has "unknown option"
t "bad --time" 2 "$KEVO" run "$recipe" --time soon;                         has "duration"
t "bad --max-evals" 2 "$KEVO" run "$recipe" --max-evals 0;                  has "positive integer"
t "unknown strategy" 2 "$KEVO" run "$recipe" --strategy nonesuch;           has "no strategy named"
t "unknown --set key" 2 "$KEVO" run "$recipe" --set frob=1;                 has "no option 'frob'"
t "missing recipe" 2 "$KEVO" run "$tmp/nope.yaml"
t "missing strategy file" 2 "$KEVO" run "$recipe" --strategy "$tmp/nope.lua"

t "autotune (default) is exhaustive on small spaces" 0 "$KEVO" run "$recipe"
dump "$(run_id)" | grep -q "^count 24$" || { echo "FAIL: autotune did not cover both spaces (20 + 4)"; fail=1; }
t "autotune (default)" 0 "$KEVO" run "$recipe" --max-evals 10
# runs.config and candidates.knobs are canonical JSON (keys sorted): the same settings are the
# same text in every process, since the archive and the journal compare them as text
"$KEVO" script <(cat <<LUA
local json = require "kevo.json"
local db = require("kevo.archive").open(nil, {readonly = true})
local run = db:run($(run_id))
local function canonical(text) return json.encode(json.decode(text), {canonical = true}) end
assert(run.config == canonical(run.config), "runs.config is not canonical: " .. run.config)
for _, c in ipairs(db:candidates(run.id)) do
  assert(c.knobs == canonical(c.knobs), "candidates.knobs is not canonical: " .. c.knobs)
end
LUA
) > /dev/null 2>&1 && echo "ok   runs.config and candidates.knobs are canonical JSON" \
  || { echo "FAIL: runs.config or candidates.knobs is not canonical JSON"; fail=1; }
has "best: candidate"; has "kevo show"; has "synthetic"
r=$(run_id)
[ -s "kevo-out/$r/best.cu" ] && grep -q "kevo knobs: BLOCK=" "kevo-out/$r/best.cu" \
  || { echo "FAIL: kevo-out/$r/best.cu missing"; fail=1; }
dump "$r" > d1.txt || { echo "FAIL: archive dump"; cat d1.txt; fail=1; }
grep -q "^count 10$" d1.txt || { echo "FAIL: --max-evals 10 not exactly 10 candidates"; tail -2 d1.txt; fail=1; }
grep -q "^status done$" d1.txt || { echo "FAIL: run not done"; tail -1 d1.txt; fail=1; }

t "random sampling, seed 1" 0 "$KEVO" run "$recipe" --max-evals 10 --set method=random
dump "$(run_id)" > d1.txt
t "same seed, same run" 0 "$KEVO" run "$recipe" --max-evals 10 --set method=random
dump "$(run_id)" > d2.txt
cmp -s d1.txt d2.txt && echo "ok   same seed, same archive" || { echo "FAIL: seed 1 twice differs"; diff d1.txt d2.txt | head; fail=1; }
t "another seed" 0 "$KEVO" run "$recipe" --max-evals 10 --seed 9 --set method=random
dump "$(run_id)" > d3.txt
cmp -s d1.txt d3.txt && { echo "FAIL: --seed 9 gave the seed 1 run"; fail=1; }

for s in greedy beam uct evolve; do
  t "strategy $s" 0 "$KEVO" run "$recipe" --strategy $s --max-evals 25
  has "best: candidate"
  dump "$(run_id)" > ds.txt || { echo "FAIL: $s: archive/parent links"; cat ds.txt; fail=1; }
done

t "composition beam+autotune" 0 "$KEVO" run "$recipe" --strategy beam+autotune --max-evals 40 \
  --set beam.rounds=100
dump "$(run_id)" > dc.txt
grep -q "^cand mutate " dc.txt && grep -q "^cand tune " dc.txt \
  && echo "ok   composition ran both parts" || { echo "FAIL: composition parts"; cat dc.txt; fail=1; }

t "user strategy by path" 0 "$KEVO" run "$recipe" --strategy "$KEVO_SRC/examples/custom_strategy.lua" \
  --set restarts=2 --max-evals 40;                                           has "custom: seed"
t "user strategy composing built-ins" 0 "$KEVO" run "$recipe" --strategy "$KEVO_SRC/examples/compose.lua" \
  --max-evals 45

printf 'return {name = "bad", run = function(ctx) local f = io.open("%s/leak", "w") end}\n' "$tmp" > evil_io.lua
t "sandbox refuses io" 1 "$KEVO" run "$recipe" --strategy ./evil_io.lua;   has "unknown global 'io'"
printf 'return {name = "bad", run = function(ctx) os.execute("touch %s/leak") end}\n' "$tmp" > evil_os.lua
t "sandbox refuses os" 1 "$KEVO" run "$recipe" --strategy ./evil_os.lua;   has "unknown global 'os'"
printf 'return {name = "bad", run = function(ctx) require("io") end}\n' > evil_req.lua
t "sandbox refuses require io" 1 "$KEVO" run "$recipe" --strategy ./evil_req.lua; has "not allowed"
printf 'return {name = "bad", run = function(ctx) require("kevo.archive").open("%s/leak") end}\n' "$tmp" > evil_db.lua
t "sandbox refuses kevo.archive" 1 "$KEVO" run "$recipe" --strategy ./evil_db.lua; has "not allowed"
[ -e "$tmp/leak" ] && { echo "FAIL: a sandboxed strategy wrote a file"; fail=1; }

# An endless strategy: every candidate new (a counter in the source), stopped only by budgets.
cat > endless.lua <<'LUA'
return {name = "endless", run = function(ctx)
  local i = 0
  while true do
    i = i + 1
    local c = ctx:candidate(ctx.seeds[1], {BLOCK = 512, VEC = 4}, "endless")
    c.source = c.source .. "\n// variant " .. i .. "\n"
    ctx:evaluate({c})
  end
end}
LUA
start=$(date +%s)
t "--time stops a run" 0 "$KEVO" run "$recipe" --strategy ./endless.lua --time 2s; has "\[time\]"
[ $(( $(date +%s) - start )) -le 15 ] || { echo "FAIL: --time 2s took too long"; fail=1; }
t "--max-evals stops a run" 0 "$KEVO" run "$recipe" --strategy ./endless.lua --max-evals 7
dump "$(run_id)" | grep -q "^count 7$" || { echo "FAIL: endless run not stopped at 7"; fail=1; }

"$KEVO" run "$recipe" --strategy ./endless.lua > "$out" 2>&1 &
pid=$!
sleep 1.5
kill -INT $pid
wait $pid; rc=$?
if [ $rc = 0 ] && grep -q "killed" "$out"; then
  dump "$(run_id)" | grep -q "^status killed$" && echo "ok   Ctrl-C marks the run killed" \
    || { echo "FAIL: Ctrl-C: run not killed in archive"; fail=1; }
else echo "FAIL: Ctrl-C: exit $rc"; sed 's/^/  | /' "$out"; fail=1; fi

# The real evaluator on a machine without a GPU: the run fails plainly (exit 1) and says why.
if [ ! -e /dev/nvidia0 ]; then
  t "no GPU: exit 1" 1 env -u KEVO_EVALUATOR "$KEVO" run "$recipe" --max-evals 4
  if "$KEVO" script <(echo 'require "kevo.evaluator"') 2>/dev/null; then has "needs a GPU"
  else has "no evaluator"; fi
fi

[ $fail = 0 ] && echo "run: all passed"
exit $fail
