#!/usr/bin/env bash
# Strategy files of the user's: ./strategies/NAME.lua takes the place of a built-in of the same
# name in `kevo list` and in `kevo run --strategy NAME` alike; a strategy file loads another by
# name (strategy.load), the host reading ./strategies/NAME.lua for it, and composes them
# (strategy.compose); a path inside a strategy is refused; `./a.lua+autotune` composes files on
# the command line; a batch cut by the budget comes back to the strategy; the verify level and
# its promotion through kevo run and replay. On the synthetic cost model: no GPU.
set -u
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export KEVO_EVALUATOR="model:$KEVO_SRC/examples/cost_model.lua"
export KEVO_DB="$tmp/kevo.db"
recipe="$KEVO_SRC/tests/integration/run_fixtures/toyscale.yaml"
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
lacks() { ! grep -q -- "$1" "$out" || { echo "FAIL: output has '$1'"; sed 's/^/  | /' "$out"; fail=1; }; }

mkdir strategies
cat > strategies/autotune.lua <<'LUA'
-- autotune: the project's own autotune, which evaluates the seeds only
return {name = "autotune", run = function(ctx) ctx:log("project autotune ran"); ctx:evaluate(ctx:seed_candidates()) end}
LUA
t "kevo list shows the project's autotune" 0 "$KEVO" list
has "the project's own autotune, which evaluates the seeds only (strategies/autotune.lua)"
t "kevo run --strategy autotune runs the project's" 0 "$KEVO" run "$recipe" --strategy autotune --max-evals 6
has "project autotune ran"; has "2 evaluations"
t "the default strategy is the project's too" 0 "$KEVO" run "$recipe" --max-evals 6
has "project autotune ran"
rm strategies/autotune.lua
t "without it, the built-in" 0 "$KEVO" run "$recipe" --strategy autotune --max-evals 6
lacks "project autotune ran"; has "6 evaluations"

cat > strategies/wide.lua <<'LUA'
-- wide: evaluates every seed at its defaults
return {name = "wide", run = function(ctx) ctx:log("wide ran"); ctx:evaluate(ctx:seed_candidates()) end}
LUA
cat > mine.lua <<'LUA'
-- mine: wide (a file of the project's, loaded by name), then the built-in autotune
local strategy = require "kevo.strategy"
local both = strategy.compose{{strategy = assert(strategy.load("wide"))},
                              {strategy = assert(strategy.load("autotune")), opts = {top = 1}}}
local _, up = strategy.load("../mine")
local _, path = strategy.load("./wide.lua")
local _, gone = strategy.load("nonesuch")
return {name = "mine", run = function(ctx, opts)
  ctx:log("refused: %s", up); ctx:log("refused: %s", path); ctx:log("refused: %s", gone)
  both.run(ctx, opts)
end}
LUA
t "a strategy file composes a project file and a built-in" 0 "$KEVO" run "$recipe" --strategy ./mine.lua --max-evals 10
has "wide+autotune: part 1 of 2: wide"; has "wide ran"; has "wide+autotune: part 2 of 2: autotune"
has "refused: E_ARG: '../mine' is not a strategy name"
has "refused: E_ARG: './wide.lua' is not a strategy name"
has "refused: E_ARG: no strategy named 'nonesuch' (./strategies/nonesuch.lua, or built in: autotune"
t "files composed on the command line" 0 "$KEVO" run "$recipe" --strategy ./strategies/wide.lua+autotune --max-evals 10
has "wide+autotune: part 1 of 2: wide"; has "wide ran"
t "a project strategy by name, composed" 0 "$KEVO" run "$recipe" --strategy wide+beam --max-evals 10
has "wide+beam: part 1 of 2: wide"
mkdir strategies/dir.lua
t "a strategy name that is a directory" 2 "$KEVO" run "$recipe" --strategy dir --max-evals 4
has "strategies/dir.lua"

# the budget ends inside a batch: the strategy sees what was evaluated, with the stop, and
# finishes its step; the run still ends on [evals]
cat > nine.lua <<'LUA'
return {name = "nine", run = function(ctx)
  local batch = {}
  for _, b in ipairs({128, 256, 512, 1024, 2048}) do
    for _, v in ipairs({1, 2}) do batch[#batch + 1] = ctx:candidate(ctx.seeds[1], {BLOCK = b, VEC = v}, "a_long_origin_name") end
  end
  local got, stop = ctx:evaluate(batch)
  ctx:log("nine: %d of %d back, stop %s, best %s", #got, #batch, stop and stop.reason or "none",
          ctx.best and "known" or "none")
end}
LUA
t "a batch cut by --max-evals comes back" 0 "$KEVO" run "$recipe" --strategy ./nine.lua --max-evals 5
has "nine: 5 of 10 back, stop evals, best known"; has "5 evaluations, 5 verified"; has "\[evals\]"
t "kevo show prints whole origins" 0 "$KEVO" show last
has " a_long_origin_name "

# the cheaper level through kevo run, replayed from the journal
cat > levels.lua <<'LUA'
return {name = "levels", run = function(ctx)
  local batch = {}
  for _, b in ipairs({128, 256, 512, 1024}) do batch[#batch + 1] = ctx:candidate(ctx.seeds[1], {BLOCK = b}, "race") end
  local quick = ctx:evaluate(batch, {level = "verify"})
  local survivors = {}
  for _, e in ipairs(quick) do if e.ok then survivors[#survivors + 1] = e.candidate end end
  local full = ctx:evaluate(survivors)
  ctx:log("levels: %d verified cheaply, %d promoted, best %.2fx", #quick, #full, ctx.best.score)
end}
LUA
t "verify level, then promotion" 0 "$KEVO" run "$recipe" --strategy ./levels.lua
has "levels: 4 verified cheaply, 4 promoted"; has "8 evaluations"
levels_run=$(sed -n 's/^run \([0-9]*\) .*/\1/p' "$out" | head -1)
t "kevo show: 4 candidates, 8 evaluations" 0 "$KEVO" show last
has "candidates  4, evaluations 8"
t "its replay asks what the journal holds" 0 "$KEVO" replay "$levels_run"
has "no divergence"

# the context's contract seen from a strategy file, through kevo run (whatever lies between)
cat > contract.lua <<'LUA'
-- contract: checks, from inside a strategy file (across whatever boundary kevo puts between a
-- strategy and its context), what docs/strategies.md promises of ctx
local search = require "kevo.search"
return {name = "contract", run = function(ctx)
  local seed = ctx.seeds[1]
  local function check(cond, what) if not cond then error("contract: " .. what, 0) end end
  local a = ctx:candidate(seed, {BLOCK = 512})
  check(a.knobs.BLOCK == 512 and a.knobs.VEC ~= nil, "candidate merges partial knobs over the base's point")
  local e = ctx:evaluate({ctx:candidate(seed, {BLOCK = 256, VEC = 4})})[1]
  local k = ctx:default_knobs(seed.space, e)
  check(k.BLOCK == 256 and k.VEC == 4, "default_knobs keeps an entry's knobs")
  local quick = ctx:evaluate({a}, {level = "verify"})[1]
  check(quick.level == "verify" and quick.bench == nil and quick.score == nil, "a verify entry is marked")
  check(ctx.best == e, "a verify entry is never the best")
  local full = ctx:evaluate({a})[1]
  check(full.id == quick.id and full.score ~= nil, "promotion keeps the candidate id")
  check(ctx:budget_left().evals == 2, "budget_left: " .. tostring(ctx:budget_left().evals))
  local ok, n, reason, is_stop = ctx:with_limits({evals = 1}, function()
    check(ctx:budget_left().evals == 1, "budget_left inside with_limits")
    local batch = {}
    for _, b in ipairs({128, 1024, 2048}) do batch[#batch + 1] = ctx:candidate(seed, {BLOCK = b}) end
    local got, s = ctx:evaluate(batch)
    return #got, s and s.reason, search.is_stop(s)
  end)
  check(ok == true and n == 1 and reason == "phase" and is_stop, "a cut batch comes back with its stop")
  ctx:log("contract: all kept")
end}
LUA
t "the ctx contract from a strategy file" 0 "$KEVO" run "$recipe" --strategy ./contract.lua --max-evals 5
has "contract: all kept"

[ $fail = 0 ] && echo "all strategy file tests passed"
exit $fail
