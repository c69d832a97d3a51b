-- escape: unbounded recursion, and a value nested too deep to send; the death is reported
-- with the strategy's last log lines
-- exit: 1
-- want: stack overflow
-- want: its last lines:
-- want: deep value refused
return {name = "e25", run = function(ctx)
  local deep = {}
  local cur = deep
  for _ = 1, 10000 do cur.x = {}; cur = cur.x end
  local ok, err = pcall(function() return ctx:evaluate({deep}) end)
  if ok then error("ESCAPED: a 10000-deep value crossed") end
  ctx:log("deep value refused: %s", tostring(err))
  local function f(n) return f(n + 1) + 1 end
  f(1)
end}
