-- escape: overrun --time by computing without ever calling the context
-- exit: 1
-- want: after the --time deadline
-- time: 3
return {name = "e15", run = function(ctx)
  ctx:evaluate(ctx:seed_candidates())
  local x = 0
  while true do x = x + 1 end
end}
