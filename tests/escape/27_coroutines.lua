-- escape: context calls from coroutines, stops thrown across them, and a coroutine bomb
-- exit: 1
-- want: not enough memory
-- args: --max-evals 6
return {name = "e27", run = function(ctx)
  local co = coroutine.wrap(function()
    local got = ctx:evaluate(ctx:seed_candidates())
    coroutine.yield(#got)
    ctx:evaluate({ctx:candidate(ctx.seeds[1], {}, "co")})
  end)
  co()
  pcall(co)
  local cos = {}
  for i = 1, 1e9 do
    cos[i] = coroutine.wrap(function()
      local s = string.rep("z", 1 << 20)
      coroutine.yield()
      return s
    end)
    cos[i]() -- suspended for ever, holding its string (wrap passes the memory error on)
  end
end}
