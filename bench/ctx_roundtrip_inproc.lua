-- kevo script bench/ctx_roundtrip_inproc.lua RECIPE COST_MODEL: bench/ctx_roundtrip.lua's
-- strategy on a context in this process (no boundary), for the difference.
local search = require "kevo.search"
local recipe = require "kevo.recipe"
local run = require "kevo.run"
local task = assert(recipe.load(arg[1]))
local host = {read_file = function(p)
  local f = io.open(p, "rb")
  if not f then return nil, "cannot read " .. p end
  local t = f:read("a")
  f:close()
  return t
end}
local model = assert(loadfile(arg[2]))()
local ctx = search.new{task = task, seeds = run.task_seeds(task, host),
                       evaluator = search.model_evaluator(model, task),
                       on_log = function(line) print(line) end}
local strat = dofile(arg[0]:gsub("_inproc%.lua$", ".lua"))
strat.run(ctx, {})
