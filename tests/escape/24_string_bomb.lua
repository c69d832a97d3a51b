-- escape: one huge string (2^40 bytes), and a huge concatenation
-- exit: 1
-- want: strategy failed
return {name = "e24", run = function(ctx)
  local ok = pcall(string.rep, "x", 1 << 40)
  if ok then error("ESCAPED: 1 TiB string") end
  local s = string.rep("y", 1 << 29)
  local t = s .. s .. s
  error("ESCAPED: " .. #t)
end}
