-- escape: call the host context's private methods and fields (_evaluate_live, _check_stop,
-- the archive, the tape) through the stand-in
-- exit: 0
-- want: private refused
return {name = "e33", run = function(ctx)
  for _, m in ipairs({"_evaluate_live", "_check_stop", "_propose", "_push_limits", "_pop_limits",
                      "_now", "_live"}) do
    local f = ctx[m]
    if f ~= nil then
      local ok = pcall(f, ctx, {{lang = "cuda", source = "x"}}, "x")
      if ok then error("ESCAPED: ctx:" .. m) end
    end
  end
  for _, k in ipairs({"_entries", "_seen", "archive", "evaluator", "proposer", "tape"}) do
    if rawget(ctx, k) ~= nil then error("ESCAPED: ctx." .. k) end
  end
  ctx:log("private refused")
  ctx:evaluate(ctx:seed_candidates()) -- and the search goes on as usual
end}
