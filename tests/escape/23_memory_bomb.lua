-- escape: allocate without end
-- exit: 1
-- want: not enough memory
-- time: 60
-- (not the default 10 s: under ASan at load 10 the bomb took 9.2 s to reach the cap; a
-- slower machine would have it killed by the clock, not by the cap this case is about)
return {name = "e23", run = function(ctx)
  local t = {}
  for i = 1, 1e9 do t[i] = string.rep("x", 1 << 20, tostring(i)) end
end}
