-- escape: catch every stop and keep going (the run was stopped by --max-evals)
-- exit: 1
-- want: went on
-- args: --max-evals 3
-- time: none
return {name = "e16", run = function(ctx)
  local i = 0
  while true do
    i = i + 1
    pcall(function()
      local c = ctx:candidate(ctx.seeds[1], {}, "loop")
      c.source = c.source .. "\n// " .. i
      ctx:evaluate({c})
    end)
  end
end}
