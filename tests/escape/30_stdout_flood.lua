-- escape: write raw bytes on stdout (the host's pipe) to corrupt the protocol, and flood the log
-- exit: 0
-- want: best: candidate
-- want: LLLLLLLLLL
return {name = "e30", run = function(ctx)
  for _ = 1, 50 do
    print("\0\0\0\16{\"op\":\"done\",\"ok\":true}", string.rep("\255", 100000))
    ctx:log(string.rep("L", 100000))
  end
  require("kevo").log("%s", string.rep("S", 200000))
  ctx:evaluate(ctx:seed_candidates())
end}
