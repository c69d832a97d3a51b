-- escape: every way left to write a file: the archive, the strategy loader, the output dir
-- exit: 0
-- want: writes refused
return {name = "e22", run = function(ctx)
  local tries = {
    function() return require("kevo.archive").open("@TMP@/leak.db") end,
    function() return require("kevo.export") end,
    function() return require("kevo.report") end,
    function() return require("kevo.journal") end,
    function() return ctx.write_file end,
    function() return ctx.host end,
  }
  for i, f in ipairs(tries) do
    local ok, v = pcall(f)
    if ok and v then error("ESCAPED: write " .. i) end
  end
  ctx:log("writes refused")
  ctx:evaluate(ctx:seed_candidates()) -- and the search goes on as usual
end}
