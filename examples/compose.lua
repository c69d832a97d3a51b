-- compose: uct for a third of the budget, then evolve seeded from its best, then autotune
--
--   kevo run recipes/softmax.yaml --strategy examples/compose.lua --max-evals 120
--
-- The one-line form of a composition is `--strategy beam+autotune` (equal shares of the budget
-- for every part but the last). This file does the same by hand, with its own shares: a
-- strategy can load the built-in ones and run them on its own context, under tighter limits
-- (ctx:with_limits), and they all share one run, one archive and one best kernel.
local strategy = require "kevo.strategy"

-- Run directly (kevo script examples/compose.lua), it says what it is: a strategy, which kevo
-- run loads (a strategy's sandbox has no `arg`, so this is skipped there).
local script_arg = rawget(_G, "arg")
if script_arg and type(script_arg[0]) == "string"
   and ("/" .. script_arg[0]):match("/compose%.lua$") then
  io.stderr:write(script_arg[0], " is a strategy, not a script: kevo run loads it, e.g.\n",
                  "  kevo run softmax --strategy ", script_arg[0], " --max-evals 120\n",
                  "  (no GPU: KEVO_EVALUATOR=model:examples/cost_model.lua; docs/strategies.md)\n")
  return 2
end

local function run(ctx, opts)
  local uct = assert(strategy.load("uct"))
  local evolve = assert(strategy.load("evolve"))
  local autotune = assert(strategy.load("autotune"))
  local left = ctx:budget_left().evals or 90
  -- a part ends when its share is spent; a stop of the whole run (--time, Ctrl-C) ends all
  ctx:with_limits({evals = left // 3}, uct.run, ctx, {iterations = 1000})
  ctx:log("compose: uct done, best %s", ctx.best and string.format("%.2fx", ctx.best.score) or "-")
  ctx:with_limits({evals = left // 3}, evolve.run, ctx, {generations = 1000, islands = 2})
  autotune.run(ctx, {top = 2}) -- tunes the two best kernels found so far
end

return {name = "compose", describe = "uct, then evolve, then autotune the winners", run = run}
