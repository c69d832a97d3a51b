-- escape: (inspected from outside) the process holds no environment, no descriptors but its
-- pipes, no privileges; it runs here until killed by --time
-- exit: 1
-- want: killed
-- time: 4
-- inspect: yes
return {name = "e21", run = function(ctx)
  ctx:evaluate(ctx:seed_candidates())
  while true do end
end}
