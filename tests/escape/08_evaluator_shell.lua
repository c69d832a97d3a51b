-- escape: the evaluator's worker option, which ran a shell command as the user
-- exit: 0
-- want: worker refused
return {name = "e08", run = function(ctx)
  local ok = pcall(function()
    return require("kevo").evaluate{recipe = "softmax", worker = "touch @TMP@/leak", lang = "cuda",
                                    source = "__global__ void k(){}"}
  end)
  if ok then error("ESCAPED: evaluate ran") end
  ok = pcall(function() return require("kevo.evaluator").new{recipe = "softmax", worker = "sh"} end)
  if ok then error("ESCAPED: evaluator.new") end
  ctx:log("worker refused")
  ctx:evaluate(ctx:seed_candidates()) -- and the search goes on as usual
end}
