-- kevo: the top-level module. Gathers what strategies and scripts use most (task, evaluate,
-- archive, log) from the modules that exist in this build.
local sys = require "kevo.sys"

local M = {}

M.version = sys.version
M.commit = sys.commit
M.clock = sys.clock

-- log(fmt, ...): one line on stderr.
function M.log(fmt, ...)
  local ok, line = pcall(string.format, fmt, ...)
  if not ok then error("kevo.log: " .. line, 2) end
  sys.log(line)
end

-- Evaluation (kevo.evaluator): M.evaluator(opts) is evaluator.new(opts);
-- M.evaluate{recipe = path, <candidate fields>, worker =, arch =, deadline_s =} judges one
-- candidate with an evaluator kept per (recipe, worker, arch, deadline) for this state.
local evaluator_keys = {recipe = true, worker = true, arch = true, deadline_s = true,
                        seed = true, trials = true}
local evaluators = {}

function M.evaluator(opts)
  return require("kevo.evaluator").new(opts)
end

function M.evaluate(opts)
  if type(opts) ~= "table" or opts.recipe == nil then
    error("kevo.evaluate: opts.recipe (a recipe path) is required", 2)
  end
  local new_opts, cand = {}, {}
  for k, v in pairs(opts) do
    if evaluator_keys[k] then new_opts[k] = v else cand[k] = v end
  end
  local key = table.concat({tostring(opts.recipe), tostring(opts.worker), tostring(opts.arch),
                            tostring(opts.deadline_s), tostring(opts.seed),
                            tostring(opts.trials)}, "\0")
  local ev = evaluators[key]
  if not ev then
    local err, code
    ev, err, code = M.evaluator(new_opts)
    if not ev then return nil, err, code end
    evaluators[key] = ev
  end
  return ev:evaluate(cand)
end

return M
