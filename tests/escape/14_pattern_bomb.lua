-- escape: a backtracking string pattern (C code no hook interrupts)
-- exit: 1
-- want: killed
-- time: 3
return {name = "e14", run = function(ctx)
  local s = string.rep("a", 60)
  s:find(string.rep("a*", 60) .. "b")
  error("ESCAPED: the pattern finished")
end}
