-- escape: reach privileged modules through allowed ones (kevo.evaluate, kevo.evaluator,
-- strategy loading, chunk names that once marked kevo's own code)
-- exit: 0
-- want: indirect refused
return {name = "e07", run = function(ctx)
  local kevo = require "kevo"
  local tries = {
    function() return kevo.evaluate{recipe = "softmax", source = "x", lang = "cuda"} end,
    function() return kevo.evaluator{recipe = "softmax"} end,
    function() return require("kevo.strategy").load("../../../etc/passwd") end,
    function() return require("kevo.strategy_core").source("../lua/kevo/run") end,
    function()
      local f = load("return require('kevo.archive')", "=[kevo]lua/kevo/run.lua")
      return f()
    end,
    function()
      local s = require("kevo.strategy").from_source(
        "return {name='x', run=function() end, m=require('kevo.llm')}", "=[kevo]lua/kevo/x.lua")
      return s and s.m
    end,
  }
  for i, f in ipairs(tries) do
    local ok, v = pcall(f)
    if ok and v then error("ESCAPED: indirect " .. i .. ": " .. tostring(v)) end
  end
  ctx:log("indirect refused")
  ctx:evaluate(ctx:seed_candidates()) -- and the search goes on as usual
end}
