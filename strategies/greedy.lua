-- greedy: refines the best kernel with the LLM, feeding back the last result each step
--
-- Options (kevo run --set KEY=VALUE):
--   steps   refinement steps (default 12)
--   n       rewrites asked for per step (default 2)
--   profile yes: profile each new parent before its rewrites are asked for (Nsight Compute,
--           docs/profile.md) and give the model its ranked diagnosis; each profile counts as
--           one evaluation of the budget (default no)
--
-- Starts from the best kernel of the run, or evaluates the seeds at their default knobs first.
-- Each step asks for n rewrites of the current best, fed the last result (a compile error, the
-- worst mismatch, or the timing), and moves to a rewrite as soon as one is faster. Without an
-- LLM it climbs the knob space instead (one knob changed at a time).
local search = require "kevo.search"

local function best_of(list)
  local best
  for _, e in ipairs(list) do
    if e.ok and (not best or search.better(e, best)) then best = e end
  end
  return best
end

local function run(ctx, opts)
  opts = opts or {}
  local steps, n = opts.steps or 12, opts.n or 2
  if not ctx.best then ctx:evaluate(ctx:seed_candidates()) end
  local parent = ctx.best or ctx:history()[1]
  if not parent then
    ctx:log("greedy: no seed to start from")
    return
  end
  if not ctx.llm then ctx:log("greedy: no LLM configured: climbing the knob space instead") end
  local rng = ctx.rng:fork("greedy")
  local feedback = parent.feedback
  local profiled = {}
  for _ = 1, steps do
    if opts.profile == "yes" and ctx.llm and parent.ok and not profiled[parent.id] then
      profiled[parent.id] = true
      local p = ctx:profile({parent})[1] -- the model sees it with the parent's result
      if p and not p.ok then ctx:log("greedy: no profile: %s", tostring(p.error)) end
    end
    local kids = ctx:children(parent, n, feedback, rng)
    if #kids > 0 then
      local got = ctx:evaluate(kids)
      -- the last result is the best of the batch, else its first failure
      local last = best_of(got) or got[1]
      feedback = search.feedback_text(last)
      if ctx.best and ctx.best ~= parent and search.better(ctx.best, parent) then
        parent = ctx.best
      end
    elseif not ctx.llm then
      return -- no neighbour left to try
    end
  end
end

return {name = "greedy",
  describe = "refines the best kernel with the LLM, feeding back the last result",
        options = {"steps", "n", "profile"},
        option_values = {steps = "count", n = "count", profile = {"yes", "no"}},
        run = run}
