-- escape: a __gc hang with no --time: Ctrl-C must still end the run (killed 2 s after it)
-- exit: 0
-- want: killed
-- time: none
-- interrupt: 1.5
return {name = "e13", run = function(ctx)
  ctx:evaluate(ctx:seed_candidates())
  setmetatable({}, {__gc = function() while true do end end})
  local keep = {}
  for i = 1, 1e8 do keep[i % 1000] = {i} end
end}
