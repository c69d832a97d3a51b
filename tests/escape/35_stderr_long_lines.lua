-- escape: write one long line after another on stderr for a while, so that kevo reads them
-- mid-line; a host that split the lines with a backtracking pattern spent 25 s on each 64 KiB
-- chunk without a newline, far past --time
-- exit: 0
-- want: best: candidate
-- want: SSSSSSSSSS
return {name = "e35", run = function(ctx)
  local kevo = require("kevo")
  local t0 = kevo.clock()
  while kevo.clock() - t0 < 0.5 do kevo.log("%s", string.rep("S", 200000)) end
  ctx:evaluate(ctx:seed_candidates())
end}
