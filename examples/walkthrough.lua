-- walkthrough.lua: an optimisation loop, step by step.
--
--   kevo script examples/walkthrough.lua
--
-- Runs anywhere: the "GPU" here is the synthetic cost model next to this file
-- (examples/cost_model.lua), so every number below is made up; on a GPU host the same loop runs
-- with kevo.evaluator instead (step 2) and the numbers are real. Read it top to bottom; each
-- step prints what it did.
local search = require "kevo.search"
local strategy = require "kevo.strategy"

local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
local function step(n, text) print(string.format("\n== step %d: %s", n, text)) end

-- Step 1. The task: what to optimise. `kevo run` loads it from a recipe (YAML); here it is
-- written out: one seed kernel, a template whose knobs (BLOCK, VEC) are #defines, and the
-- values each knob may take, as the ordered list of knobs a strategy sees in ctx.seeds[i].space
-- (docs/strategies.md; search.new also takes a recipe's {NAME = {values}} and orders it by name).
step(1, "a task with one seed template and its knob space")
local SEED = [[
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 1
#endif
__global__ void scale(const float *x, float *y, int n) {
  int i = (blockIdx.x * BLOCK + threadIdx.x) * VEC;
  for (int v = 0; v < VEC; v++) if (i + v < n) y[i + v] = 2.0f * x[i + v];
}
]]
local task = {name = "scale", summary = "y = 2x"}
local seeds = {{lang = "cuda", source = SEED, file = "scale.cu",
                space = {{name = "BLOCK", values = {128, 256, 512, 1024}},
                         {name = "VEC", values = {1, 2, 4, 8}}}}}
print("seed knobs: BLOCK in {128,256,512,1024}, VEC in {1,2,4,8}: 16 points")

-- Step 2. The evaluator: compiles, verifies against the reference, times. On a GPU host:
--   local ev = require("kevo.evaluator").new{recipe = task}
-- Here: the cost model, wrapped so its answers look like real evaluation results.
step(2, "an evaluator (the synthetic cost model)")
local model = dofile(here .. "/cost_model.lua")
local evaluator = search.model_evaluator(model, task)

-- Step 3. The search context: what every strategy sees. Budgets live here, not in strategies.
step(3, "a search context with a budget of 24 evaluations")
local ctx = search.new{task = task, seeds = seeds, evaluator = evaluator, seed = 42,
                       max_evals = 24, on_log = print}
print("ctx.seeds[1] has " .. #ctx:knob_space(ctx.seeds[1]) .. " knobs")

-- Step 4. Evaluate the seed at its default knobs (ctx:default_knobs: under kevo run, the
-- values its source defines when the space holds them; this seed table gives no `defaults`, so
-- here each knob's first value).
step(4, "evaluate the seed at its default knobs")
local first = ctx:evaluate(ctx:seed_candidates())[1]
print(string.format("verdict %s, %.4f ms, %.2fx the reference, %.0f%% of roofline",
                    first.verdict, first.bench.median_ms, first.score, first.bench.roofline_pct))
print("the feedback a model would read next: " .. search.feedback_text(first))

-- Step 5. A failure looks like this: a candidate that does not compile.
step(5, "a broken candidate")
local broken = ctx:evaluate({{lang = "cuda", source = SEED .. "\n#error oops\n", parent = first,
                              origin = "hand"}})[1]
print("verdict " .. broken.verdict .. ": " .. broken.message)

-- Step 6. Hill climbing by hand: evaluate the neighbours of the current point (one knob
-- changed), move to the best one, stop at a local optimum.
step(6, "hill climbing by hand")
local cur = first
while true do
  local nb = ctx:neighbors(cur, 4)
  if #nb == 0 then break end
  local moved = false
  for _, e in ipairs(ctx:evaluate(nb)) do
    if e.ok and search.better(e, cur) then cur, moved = e, true end
  end
  print(
    string.format("  at %s: %.2fx (%d evaluations so far)", search.knobs_key(cur.candidate.knobs),
                      cur.score, ctx.evals))
  if not moved then break end
end

-- Step 7. Or let a strategy do it. Built-in strategies are Lua files like your own; they stop
-- when the budget is spent (a "stop" raised by ctx:evaluate, which the run driver catches).
step(7, "autotune with what is left of the budget")
local ok, err = pcall(strategy.load("autotune").run, ctx, {})
if not ok then print("stopped: " .. tostring(err)) end

-- Step 8. What the run found. `kevo run` writes the same into the archive (kevo.db), prints
-- it, and writes the best source to kevo-out/<run>/best.cu.
step(8, "the result")
print(string.format("%d evaluations; best %.2fx at %s", ctx.evals, ctx.best.score,
                    search.knobs_key(ctx.best.candidate.knobs)))
for i, e in ipairs(ctx:top(3)) do
  print(string.format("  #%d  %.2fx  %s  (origin %s, parent %s)", i, e.score,
                      search.knobs_key(e.candidate.knobs), e.candidate.origin,
                      tostring(e.candidate.parent)))
end
print("\nnext: kevo run RECIPE --strategy autotune (see docs/strategies.md)")
return 0
