-- The search context's contract as docs/strategies.md states it, where a newcomer was misled
-- (issue 20): what a strategy gets when a budget ends inside its batch (the entries that were
-- evaluated, in order, with the stop as a second value; the next call raises the stop);
-- ctx:budget_left() inside with_limits and what with_limits returns; ctx:default_knobs with a
-- base; ctx:candidate merging partial knobs over the base's point; the cheaper evaluation level
-- (verify only), marked and promotable.
local search = require "kevo.search"

local src = os.getenv("KEVO_SRC") or "."
local model = dofile(src .. "/examples/cost_model.lua")
local SEED = "#ifndef BLOCK\n#define BLOCK 256\n#endif\n__global__ void k() { /* BLOCK VEC */ }\n"

local function new_ctx(max_evals)
  return search.new{task = {name = "t"}, evaluator = search.model_evaluator(model, {}),
    seeds = {{lang = "cuda", source = SEED, file = "k.cu",
              space = {{name = "BLOCK", values = {32, 64, 128, 256, 512, 1024}},
                       {name = "VEC", values = {1, 2, 4}}}}},
    max_evals = max_evals, on_log = function() end}
end

local function batch(ctx, n)
  local out, seed = {}, ctx.seeds[1]
  for i = 1, n do
    out[i] = ctx:candidate(seed, {BLOCK = seed.space[1].values[(i - 1) % 6 + 1],
                                  VEC = seed.space[2].values[(i - 1) // 6 + 1]}, "test")
  end
  return out
end

-- --max-evals 5, a batch of 9: five entries come back, with the stop
do
  local ctx = new_ctx(5)
  local first = ctx:evaluate(batch(ctx, 1))
  assert(#first == 1)
  local cands = batch(ctx, 9) -- candidate 1 is a duplicate of `first`: free
  local got, s = ctx:evaluate(cands)
  assert(#got == 5, "entries back: " .. #got)
  for i, e in ipairs(got) do
    assert(e.id and e.candidate.knobs.BLOCK == cands[i].knobs.BLOCK,
      "entry " .. i .. " out of order")
  end
  assert(got[1] == first[1], "the duplicate is the earlier entry")
  assert(ctx.evals == 5, "evaluations: " .. ctx.evals)
  assert(search.is_stop(s) and s.reason == "evals", tostring(s))
  assert(ctx.best, "the strategy can finish its step: the best is known")
  local ok, e = pcall(ctx.evaluate, ctx, batch(ctx, 12))
  assert(not ok and search.is_stop(e) and e.reason == "evals",
    "the next call stops: " .. tostring(e))
end

-- a batch within the budget: no second value
do
  local ctx = new_ctx(10)
  local got, s = ctx:evaluate(batch(ctx, 4))
  assert(#got == 4 and s == nil)
end

-- inside with_limits: the phase's budget, what budget_left says, and what with_limits returns
do
  local ctx = new_ctx(100)
  local seen = {}
  local ok, n, reason = ctx:with_limits({evals = 3}, function()
    seen.left = ctx:budget_left().evals
    local got, s = ctx:evaluate(batch(ctx, 7))
    seen.after = ctx:budget_left().evals
    return #got, s and s.reason
  end)
  assert(seen.left == 3, "budget_left inside with_limits is the phase's: " .. tostring(seen.left))
  assert(seen.after == 0)
  assert(ok == true and n == 3 and reason == "phase", "with_limits returned " ..
         tostring(ok) .. " " .. tostring(n) .. " " .. tostring(reason))
  assert(ctx:budget_left().evals == 97, "the run's budget outside: " .. ctx:budget_left().evals)
  -- a phase that goes on calling after its budget: false, stop
  local ok2, e = ctx:with_limits({evals = 2}, function()
    ctx:evaluate(batch(ctx, 18))
    ctx:evaluate(batch(ctx, 1))
    error("not reached")
  end)
  assert(ok2 == false and search.is_stop(e) and e.reason == "phase", tostring(e))
end

-- default_knobs(space, base): base's own knobs where the space has them, else the seed's
-- source defaults ("#define BLOCK 256"), else the first value
do
  local ctx = new_ctx(100)
  local seed = ctx.seeds[1]
  seed.defaults = {BLOCK = "256"}
  local d = ctx:default_knobs(seed.space, seed)
  assert(d.BLOCK == 256 and d.VEC == 1, search.knobs_key(d))
  local e = ctx:evaluate({ctx:candidate(seed, {BLOCK = 64, VEC = 4})})[1]
  local k = ctx:default_knobs(seed.space, e)
  assert(k.BLOCK == 64 and k.VEC == 4, "an entry keeps its knobs: " .. search.knobs_key(k))
  k = ctx:default_knobs(seed.space, e.candidate)
  assert(k.BLOCK == 64 and k.VEC == 4, "a candidate keeps its knobs: " .. search.knobs_key(k))
  -- candidate(base, partial knobs): merged over the base's point, so one kernel, one knob table
  local a = ctx:candidate(seed, {BLOCK = 512})
  assert(a.knobs.BLOCK == 512 and a.knobs.VEC == 1, search.knobs_key(a.knobs))
  local b = ctx:candidate(seed, {BLOCK = 512, VEC = 1})
  assert(search.knobs_key(a.knobs) == search.knobs_key(b.knobs))
  local n = ctx.evals
  ctx:evaluate({a, b})
  assert(ctx.evals == n + 1, "the same kernel evaluated twice")
  local c = ctx:candidate(e, {VEC = 2})
  assert(c.knobs.BLOCK == 64 and c.knobs.VEC == 2 and c.parent == e.id, search.knobs_key(c.knobs))
end

-- the cheaper level: verify only, marked, never a measurement, promotable to a full evaluation
do
  local archive = require "kevo.archive"
  local path = os.tmpname()
  local db = assert(archive.open(path))
  local run = assert(db:run_create{recipe = "t", strategy = "test", config = "{}", seed = 1})
  local ctx = search.new{task = {name = "t"}, evaluator = search.model_evaluator(model, {}),
    seeds = new_ctx().seeds, archive = db, run = run, on_log = function() end}
  local cands = batch(ctx, 4)
  local quick = ctx:evaluate(cands, {level = "verify"})
  assert(#quick == 4 and ctx.evals == 4)
  for _, e in ipairs(quick) do
    assert(e.ok and e.level == "verify" and e.stage == "verify", tostring(e.level))
    assert(e.bench == nil and e.score == nil, "a verify-only entry holds no measurement")
  end
  assert(ctx.best == nil and #ctx:top(5) == 0, "verify-only entries are never the best")
  assert(not ctx:known(cands[1]), "known() is about full evaluations")
  ctx:evaluate(cands, {level = "verify"})
  assert(ctx.evals == 4, "the same level again is free")
  local full = ctx:evaluate({cands[2], cands[3]}, {level = "full"})
  assert(ctx.evals == 6, "promotion evaluates again")
  assert(full[1].id == quick[2].id and full[2].id == quick[3].id,
    "a promotion keeps the candidate id")
  assert(full[1].level == nil and full[1].score and full[1].bench.median_ms,
    "a full entry is measured")
  assert(ctx.best == full[1] or ctx.best == full[2])
  assert(ctx:known(cands[2]) and ctx:entry(quick[2].id) == full[1])
  local again = ctx:evaluate({cands[2]}, {level = "verify"})
  assert(again[1] == full[1] and ctx.evals == 6, "a full entry answers a verify request, free")
  assert(#assert(db:candidates(run)) == 4, "one candidate row per kernel")
  local rows = assert(db:evaluations(quick[2].id))
  assert(#rows == 2, "two evaluations of the promoted candidate: " .. #rows)
  local json = require "kevo.json"
  local levels = {}
  for _, r in ipairs(rows) do levels[#levels + 1] = json.decode(r.result).level or "full" end
  table.sort(levels)
  assert(levels[1] == "full" and levels[2] == "verify", table.concat(levels, ","))
  local best = assert(db:best(run))
  assert(best.speedup and json.decode(best.result).level == nil, "the archive's best is a full one")
  assert(not pcall(ctx.evaluate, ctx, cands, {level = "quick"}), "an unknown level raises")
  assert(not pcall(ctx.evaluate, ctx, cands, {bogus = 1}), "an unknown option raises")
  db:close()
  os.remove(path); os.remove(path .. "-wal"); os.remove(path .. "-shm")
end

print("ok: the search context keeps its documented contract")
return 0
