-- escape: allocate without end
-- exit: 1
-- want: not enough memory
return {name = "e23", run = function(ctx)
  local t = {}
  for i = 1, 1e9 do t[i] = string.rep("x", 1 << 20, tostring(i)) end
end}
