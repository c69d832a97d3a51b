-- escape: poison the string metatable and string functions, then run a real search: the host's
-- results, archive and summary must not change
-- exit: 0
-- want: best: candidate
return {name = "e20", run = function(ctx)
  local sm = getmetatable("")
  sm.__index = setmetatable({format = function() return "42x" end}, {__index = string})
  string.rep = function() return "" end
  require("kevo.strategy").load("autotune").run(ctx, {})
end}
