-- beam: beam search: keeps the k best kernels, expands each with n LLM rewrites per round
--
-- Options (kevo run --set KEY=VALUE):
--   width   kernels kept per round (default 3)
--   n       children per kernel per round (default 3)
--   rounds  rounds (default 4)
--
-- Starts from the best kernels of the run, or the seeds at their default knobs. Each round
-- expands every kernel of the beam (all children are evaluated in one batch) and keeps the
-- `width` best verified kernels among the beam and its children. A kernel's next prompt carries
-- the feedback of its failed children. Without an LLM the children are knob mutations.
local search = require "kevo.search"

local function run(ctx, opts)
  opts = opts or {}
  local width, n, rounds = opts.width or 3, opts.n or 3, opts.rounds or 4
  local rng = ctx.rng:fork("beam")
  local beam = ctx:top(width)
  if #beam == 0 then
    ctx:evaluate(ctx:seed_candidates())
    beam = ctx:top(width)
  end
  if #beam == 0 then -- nothing verified: let the model try to fix the seeds
    for _, e in ipairs(ctx:history()) do if #beam < width then beam[#beam + 1] = e end end
  end
  if #beam == 0 then return end
  local feedback = {} -- entry id -> text for its next prompt
  for round = 1, rounds do
    local kids = {}
    for _, m in ipairs(beam) do
      for _, c in ipairs(ctx:children(m, n, feedback[m.id] or m.feedback, rng)) do
        kids[#kids + 1] = c
      end
    end
    if #kids == 0 then return end
    local got = ctx:evaluate(kids)
    for _, e in ipairs(got) do
      if not e.ok and e.candidate.parent then
        feedback[e.candidate.parent] = search.feedback_text(e)
      end
    end
    local pool, seen = {}, {}
    for _, list in ipairs({beam, got}) do
      for _, e in ipairs(list) do
        if not seen[e.id] then seen[e.id] = true; pool[#pool + 1] = e end
      end
    end
    local next_beam = ctx:top(width, pool)
    if #next_beam > 0 then beam = next_beam end
    ctx:log("beam: round %d: beam %s", round, search.describe_scores(beam))
  end
end

return {name = "beam",
  describe = "keeps the k best kernels, expands each with n LLM rewrites per round",
        options = {"width", "n", "rounds"},
        option_values = {width = "count", n = "count", rounds = "count"},
        run = run}
