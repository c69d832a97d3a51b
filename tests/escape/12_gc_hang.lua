-- escape: a __gc finalizer that never returns (Lua runs finalizers with hooks off, so no
-- instruction budget fires)
-- exit: 1
-- want: killed
-- time: 3
return {name = "e12", run = function(ctx)
  setmetatable({}, {__gc = function() while true do end end})
  local keep = {}
  for i = 1, 1e7 do keep[i % 1000] = {i} end
end}
