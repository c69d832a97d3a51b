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

return M
