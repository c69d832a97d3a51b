-- Every strategy driven end to end on the synthetic cost model (examples/cost_model.lua), with
-- and without a scripted proposer standing in for the LLM (the real loopback server is used by
-- tests/integration/test_run_llm.sh). Checks determinism, budgets, dedupe and composition.
local search = require "kevo.search"
local strategy = require "kevo.strategy"

local src_root = os.getenv("KEVO_SRC") or "."
local model = dofile(src_root .. "/examples/cost_model.lua")

local SEED_SRC = [[
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 1
#endif
__global__ void k(const float *x, float *y, int n) { /* BLOCK VEC UNROLL */ }
]]
local seeds = {
  {lang = "cuda", source = SEED_SRC, file = "k.cu",
   space = {BLOCK = {"128", "256", "512", "1024", "2048"}, VEC = {"1", "2", "4", "8"},
            UNROLL = {"1", "2", "4"}}},
  {lang = "cuda", source = SEED_SRC:gsub("k%(", "k2("), file = "k2.cu",
   space = {BLOCK = {"256", "512"}, VEC = {"1", "4"}}},
}

-- A scripted proposer: rewrites are the parent with a faster (or broken) marker; deterministic.
local function proposer()
  local calls = 0
  return {propose = function(parent, entry, feedback, n, task)
    local out = {}
    for i = 1, n do
      calls = calls + 1
      local speed = 1 + ((calls * 7) % 10) / 20
      local src = parent.source:gsub("\n/%* kevo%-model: speed=[%d.]+ %*/", "")
      if calls % 5 == 0 then
        src = src .. "\n#error broken rewrite\n"
      else
        local prev = tonumber(parent.source:match("kevo%-model: speed=([%d.]+)")) or 1
        src = src .. string.format("\n/* kevo-model: speed=%.3f */", prev * speed)
      end
      out[i] = {source = src}
    end
    return out, 100 * n
  end, calls = function() return calls end}
end

local function new_ctx(o)
  o = o or {}
  local t = 0
  return search.new{
    task = {name = "test"}, seeds = seeds, seed = o.seed or 7,
    evaluator = search.model_evaluator(model, {}),
    proposer = o.llm and proposer() or nil,
    max_evals = o.max_evals, time_s = o.time_s, max_tokens = o.max_tokens,
    clock = o.clock or function() t = t + 0.001; return t end,
    on_log = o.log or function() end,
  }
end

local function drive(name, o, opts)
  local ctx = new_ctx(o)
  local s = assert(strategy.load(name))
  local ok, e = pcall(s.run, ctx, opts or {})
  if not ok and not search.is_stop(e) then error(name .. ": " .. tostring(e), 0) end
  return ctx, (not ok) and e or nil
end

local function trace(ctx)
  local o = {}
  for i, e in ipairs(ctx:history()) do
    o[i] = search.knobs_key(e.candidate.knobs) .. "|" .. #e.candidate.source .. "|" .. e.verdict
  end
  return table.concat(o, ";")
end

-- default_knobs: the seed's own defaults where the space has them, else the first value
do
  local ctx = search.new{task = {name = "t"}, evaluator = search.model_evaluator(model, {}),
    seeds =
      {{lang = "cuda", source = SEED_SRC, file = "k.cu", defaults = {BLOCK = "256", VEC = "3"},
              space = {BLOCK = {"128", "256"}, VEC = {"1", "2"}, UNROLL = {"2", "4"}}}}}
  local space = ctx.seeds[1].space
  local k = ctx:default_knobs(space, ctx.seeds[1])
  assert(search.knobs_key(k) == "BLOCK=256,UNROLL=2,VEC=1", search.knobs_key(k))
  local c = ctx:candidate(ctx.seeds[1], {BLOCK = "128"}, "tune")
  assert(tostring(ctx:default_knobs(space, c).BLOCK) == "256", "a candidate: its seed's defaults")
  assert(tostring(ctx:default_knobs(space).BLOCK) == "128", "no base: first values")
end

-- rng: deterministic, in range, forks differ
local r1, r2 = search.rng(42), search.rng(42)
for _ = 1, 100 do
  local a = r1:int(3, 9)
  assert(a == r2:int(3, 9) and a >= 3 and a <= 9)
end
assert(search.rng(1):random() ~= search.rng(2):random())
assert(search.rng(1):fork("a"):random() ~= search.rng(1):fork("b"):random())

for _, name in ipairs({"autotune", "greedy", "beam", "uct", "evolve"}) do
  for _, llm in ipairs({false, true}) do
    local ctx, stopped = drive(name, {llm = llm, max_evals = 40})
    assert(ctx.evals > 0, name .. ": no evaluation")
    assert(ctx.evals <= 40, name .. ": went past --max-evals: " .. ctx.evals)
    assert(ctx.best and ctx.best.ok, name .. ": found no verified kernel")
    assert(ctx.best.score > 1.0, name .. ": best is no faster than the reference")
    -- every entry but the seeds' has a parent that was evaluated before it
    for _, e in ipairs(ctx:history()) do
      local p = e.candidate.parent
      if p then assert(ctx:entry(p) and ctx:entry(p).n < e.n, name .. ": parent link broken") end
    end
    -- same seed, same run
    local again = drive(name, {llm = llm, max_evals = 40})
    assert(trace(ctx) == trace(again), name .. ": not deterministic")
    print(string.format("%-8s llm=%-5s evals %3d best %.3fx %s", name, tostring(llm), ctx.evals,
                        ctx.best.score, stopped and tostring(stopped) or "(returned)"))
  end
end

-- autotune, small space: exhaustive finds the optimum of seed 2 (512, VEC 4) exactly
do
  local ctx = search.new{task = {}, seeds = {seeds[2]}, seed = 1,
                         evaluator = search.model_evaluator(model, {}), on_log = function() end}
  strategy.load("autotune").run(ctx, {})
  assert(ctx.evals == 4, "exhaustive over 4 points made " .. ctx.evals)
  assert(ctx.best.candidate.knobs.BLOCK == 512 and ctx.best.candidate.knobs.VEC == 4)
  -- evaluating known points again is free
  local again = ctx:evaluate(ctx:seed_candidates())
  assert(ctx.evals == 4 and again[1].n <= 4)
end

-- auto: a space larger than its share of the budget is annealed from the seed's defaults
do
  local lines = {}
  local ctx = drive("autotune", {max_evals = 13, log = function(l) lines[#lines + 1] = l end})
  local logged = table.concat(lines, "\n")
  assert(logged:find("4 point(s), exhaustive", 1, true) and
    logged:find("60 point(s), anneal", 1, true),
         logged)
  assert(ctx.evals == 13)
end

-- different seeds give different runs (random parts)
assert(trace(drive("evolve", {seed = 1, max_evals = 30})) ~=
       trace(drive("evolve", {seed = 2, max_evals = 30})))

-- budgets: evals (exactly), time, tokens
do
  local ctx, e = drive("autotune", {max_evals = 13}, {method = "exhaustive"})
  assert(ctx.evals == 13 and search.is_stop(e) and e.reason == "evals", tostring(e))
  local now = 0
  ctx,
  e = drive("evolve",
  {llm = true, time_s = 0.5, clock = function() now = now + 0.01; return now end},
                 {generations = 1000})
  assert(search.is_stop(e) and e.reason == "time", tostring(e))
  ctx, e = drive("greedy", {llm = true, max_tokens = 1000}, {steps = 1000})
  assert(search.is_stop(e) and e.reason == "tokens" and ctx.tokens >= 1000, tostring(e))
  assert(ctx.tokens < 1000 + 200, "tokens overshot by more than one call")
end

-- a stop cannot be swallowed: a strategy that pcalls evaluate is stopped again next call
do
  local ctx = new_ctx({max_evals = 2})
  local cands = ctx:seed_candidates()
  ctx:evaluate(cands)
  assert(not pcall(ctx.evaluate, ctx, {ctx:candidate(ctx.seeds[1], {BLOCK = 128}, "x")}))
  local ok, e = pcall(ctx.evaluate, ctx, {ctx:candidate(ctx.seeds[1], {BLOCK = 512}, "x")})
  assert(not ok and search.is_stop(e) and e.reason == "evals")
end

-- composition: both parts run on one context; the first gets a share of the budget
do
  local ctx = new_ctx({llm = true, max_evals = 40})
  local s = strategy.compose({{strategy = strategy.load("beam"), opts = {rounds = 50}},
                              {strategy = strategy.load("autotune")}})
  assert(s.name == "beam+autotune")
  local ok, e = pcall(s.run, ctx, {})
  assert(ok or search.is_global_stop(e), tostring(e))
  local origins = {}
  for _, en in ipairs(ctx:history()) do origins[en.candidate.origin] = true end
  assert(origins.llm and origins.tune, "composition did not run both parts")
  assert(ctx.evals > 20 and ctx.evals <= 40, "composition made " .. ctx.evals .. " evaluations")
end

-- a recipe without seeds (kevo import): the strategies start from kernels the LLM writes from
-- the task alone (proposer called with no parent); without an LLM there is nothing to start from
do
  local asked = {}
  local written = [[extern "C" __global__ void k(float *x) {}
/* kevo-model: speed=1.2 */]]
  local proposer = {propose = function(parent, entry, feedback, n)
    asked[#asked + 1] = {parent = parent, entry = entry, n = n}
    local out = {}
    for i = 1, n do out[i] = {lang = "cuda", source = written .. string.rep("\n", i + #asked)} end
    return out, 10
  end}
  local ctx = search.new{
    task = {name = "imported"}, seeds = {}, seed = 3, evaluator = search.model_evaluator(model, {}),
    proposer = proposer,
    max_evals = 6, clock = os.clock, on_log = function() end,
  }
  local first = ctx:seed_candidates()
  assert(#first == 2 and asked[1].parent == nil and asked[1].entry == nil and asked[1].n == 2)
  assert(first[1].origin == "llm" and first[1].parent == nil and first[1].lang == "cuda")
  local ok, e = pcall(assert(strategy.load("greedy")).run, ctx, {steps = 3})
  assert(ok or search.is_stop(e), tostring(e))
  assert(ctx.best and ctx.best.candidate.origin == "llm",
    "greedy found no kernel written by the LLM")
  assert(asked[#asked].parent ~= nil, "greedy did not go on to rewrite the LLM's kernel")
  for _, name in ipairs{"beam", "uct", "evolve"} do
    asked = {}
    ctx = search.new{task = {name = "imported"}, seeds = {}, seed = 3,
                     evaluator = search.model_evaluator(model, {}), proposer = proposer,
                     max_evals = 6, clock = os.clock, on_log = function() end}
    ok, e = pcall(assert(strategy.load(name)).run, ctx, {})
    assert(ok or search.is_stop(e), name .. ": " .. tostring(e))
    assert(ctx.best and asked[1].parent == nil, name .. " did not start from the LLM's kernels")
  end
  local none = search.new{task = {name = "imported"}, seeds = {},
                          evaluator = search.model_evaluator(model, {})}
  assert(#none:seed_candidates() == 0)
end

-- misuse raises, naming the problem
assert(not pcall(new_ctx().evaluate, new_ctx(), {{lang = "fortran", source = "x"}}))
assert(select(3, strategy.load("nonesuch")) == "E_ARG")
print("strategies ok")

-- a strategy holds the context: nothing the host handed it (evaluator, archive, proposer) may be
-- reachable from there, or a sandboxed strategy could write the archive or spend the LLM budget
do
  local secret_eval, secret_archive = search.model_evaluator(model, {}), {}
  local secret_proposer = {propose = function() return {}, 0 end}
  local c = search.new{task = {name = "t"}, seeds = {}, evaluator = secret_eval,
                       archive = secret_archive, proposer = secret_proposer}
  local seen = {}
  local function walk(v, depth)
    if type(v) ~= "table" or seen[v] or depth > 6 then return end
    seen[v] = true
    assert(v ~= secret_eval and v ~= secret_archive and v ~= secret_proposer,
           "a strategy can reach the host's objects through its context")
    for k, x in pairs(v) do
      walk(k, depth + 1)
      walk(x, depth + 1)
    end
    walk(getmetatable(v), depth + 1)
  end
  walk(c, 0)
end
print("strategies ok")

-- a model that only repeats a kernel it already wrote: each repeat is a paid call, so the
-- search gives up after a few instead of the 50 free duplicate batches a knob search gets
do
  local calls = 0
  local same = [[extern "C" __global__ void k(float *x) {}
/* kevo-model: speed=1.1 */]]
  local c = search.new{
    task = {name = "imported"}, seeds = {}, seed = 5, evaluator = search.model_evaluator(model, {}),
    proposer = {propose = function(_, _, _, n)
      calls = calls + 1
      local out = {}
      for i = 1, n do out[i] = {lang = "cuda", source = same} end
      return out, 10
    end},
    clock = os.clock, on_log = function() end,
  }
  local ok, e = pcall(assert(strategy.load("greedy")).run, c, {steps = 100})
  assert(ok or search.is_stop(e), tostring(e))
  assert(calls <= 8, "a repeating model was asked " .. calls .. " times")
  assert(c.evals == 1, "the repeated kernel was evaluated more than once")
end
print("repeating model ok")
