-- escape: drive the user's terminal: ESC/CSI sequences, 8-bit C1, carriage returns and
-- bidi overrides in log lines, stderr, the progress line (a note), knob values and the reason
-- the run stopped; none may reach the output raw (test_escape.sh checks every case for them)
-- exit: 1
-- (the strategy raises after a verified kernel: the run is marked failed, the kernel is kept,
-- and the run exits 1: it failed)
-- want: best: candidate
-- want: \033]0;pwned\007
-- want: \033[2J
return {name = "e34", run = function(ctx)
  local bad = "\27]0;pwned\7\27[2J\27[1A\r\194\155 31m\226\128\174desrever\8\8"
  ctx:log("log: " .. bad)
  print("stdout: " .. bad)
  require("kevo").log("%s", "kevo.log: " .. bad)
  local c = ctx:seed_candidates()
  for _, e in ipairs(c) do e.note = "note " .. bad end
  ctx:evaluate(c)
  error("stopped " .. bad)
end}
