-- escape: evaluate, then edit the entries it got back (ok, score, speed-up) and hand them to
-- the context as if they were the host's
-- exit: 0
-- want: forged entries ignored
return {name = "e11", run = function(ctx)
  local got = ctx:evaluate(ctx:seed_candidates())
  for _, e in ipairs(got) do
    e.ok, e.score, e.verdict = true, 4242, "ok"
    e.bench = {speedup = 4242, median_ms = 0.0001}
  end
  local top = ctx:top(1)
  if top[1] and top[1].score == 4242 then ctx:log("top reads the process's copy") end
  -- a forged table with a real id is data, not the host's entry
  local forged = {id = got[1].id, candidate = got[1].candidate, ok = true, score = 4242}
  ctx:children(forged, 1)
  ctx:evaluate({ctx:candidate(forged, {}, "forged")})
  local ok, err = pcall(function() return ctx:top(1, {{["$e"] = 999999}}) end)
  ctx:log("forged entries ignored (%s)", ok and "no error" or tostring(err))
end}
