-- escape: call the compilers directly, outside every budget
-- exit: 0
-- want: compilers refused
return {name = "e17", run = function(ctx)
  for _, m in ipairs({"kevo.cuda", "kevo.triton", "kevo.cuda_core", "kevo.torchref"}) do
    local ok, mod = pcall(require, m)
    if ok then error("ESCAPED: " .. m .. " " .. tostring(mod)) end
  end
  ctx:log("compilers refused")
  ctx:evaluate(ctx:seed_candidates()) -- and the search goes on as usual
end}
