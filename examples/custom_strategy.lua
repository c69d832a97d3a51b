-- custom: a strategy of your own: random restarts, each followed by a short hill climb
--
--   kevo run recipes/softmax.yaml --strategy examples/custom_strategy.lua --set restarts=3
--
-- Options:
--   restarts   random starting points per seed (default 4)
--   climb      hill-climbing steps from each start (default 6)
--
-- A strategy file returns {name=, describe=, run=function(ctx, opts)}. It runs in kevo's
-- sandbox: string, table, math, utf8, coroutine and kevo's modules; no io, os or package.
-- Everything it needs comes through ctx (see docs/strategies.md). It needs no budget code:
-- ctx:evaluate stops the strategy when --max-evals or --time is spent.
local search = require "kevo.search"

-- Run directly (kevo script examples/custom_strategy.lua), it says what it is: a strategy, which
-- kevo run loads (a strategy's sandbox has no `arg`, so this is skipped there).
local script_arg = rawget(_G, "arg")
if script_arg and type(script_arg[0]) == "string"
   and ("/" .. script_arg[0]):match("/custom_strategy%.lua$") then
  io.stderr:write(script_arg[0], " is a strategy, not a script: kevo run loads it, e.g.\n",
                  "  kevo run softmax --strategy ", script_arg[0], " --set restarts=3\n",
                  "  (no GPU: KEVO_EVALUATOR=model:examples/cost_model.lua; docs/strategies.md)\n")
  return 2
end

local function run(ctx, opts)
  local restarts, climb = opts.restarts or 4, opts.climb or 6
  local rng = ctx.rng:fork("custom") -- all randomness from the run's seed: runs replay exactly
  for _, seed in ipairs(ctx.seeds) do
    for r = 1, restarts do
      local start = ctx:candidate(seed, ctx:random_knobs(seed.space, rng), "restart")
      local cur = ctx:evaluate({start})[1]
      for _ = 1, climb do
        local got = ctx:evaluate(ctx:neighbors(cur, 4, rng)) -- one batch: evaluated together
        local moved = false
        for _, e in ipairs(got) do
          if e.ok and (not cur.ok or search.better(e, cur)) then cur, moved = e, true end
        end
        if not moved then break end -- a local optimum
      end
      ctx:log("custom: seed %d restart %d ends at %s", seed.index, r, search.describe_scores({cur}))
    end
  end
end

return {name = "custom", describe = "random restarts, each followed by a short hill climb",
        options = {"restarts", "climb"}, run = run}
