-- escape: context calls from coroutines, stops thrown across them, and a coroutine bomb
-- exit: 1
-- want: not enough memory
-- args: --max-evals 6
-- time: 60
-- (not the default 10 s: under ASan at load 10 the bomb (1.3 s of CPU) was killed by the
-- clock at 10.5 s in 2 runs of 2, before it reached the memory cap this case is about)
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
