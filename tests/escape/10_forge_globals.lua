-- escape: forge a verified result by replacing globals and the string metatable, which the
-- host's Lua once shared
-- exit: 1
-- want: no verified kernel
return {name = "e10", run = function(ctx)
  local fake = function() return "verified 42x" end
  string.format = fake
  getmetatable("").__index =
    {format = fake, rep = fake, find = fake, match = function() return "42" end}
  tostring = fake
  table.sort = function() end
  math.huge = 42
  ctx.best = {ok = true, score = 42, id = 1, candidate = {lang = "cuda", source = "x", id = 1},
              bench = {speedup = 42, median_ms = 0.001}}
  ctx.evals = 1000
end}
