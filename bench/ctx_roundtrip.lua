-- ctx_roundtrip: a strategy that times ctx calls (bench/ctx_roundtrip.sh). Run by kevo run, each
-- call crosses to kevo's process and back; run by ctx_roundtrip_inproc.lua, it is a plain call.
-- Prints ROUNDTRIP_US <what> <microseconds per call>.
local N = 20000

local function measure(ctx, what, f)
  local clock = require("kevo").clock
  for _ = 1, 500 do f() end -- warm-up
  local t0 = clock()
  for _ = 1, N do f() end
  ctx:log("ROUNDTRIP_US %s %.2f", what, (clock() - t0) / N * 1e6)
end

local function run(ctx)
  local got = ctx:evaluate(ctx:seed_candidates())
  local e = got[1]
  local space = ctx:knob_space(e)
  measure(ctx, "budget_left", function() return ctx:budget_left() end)
  measure(ctx, "space_size", function() return ctx:space_size(space) end)
  measure(ctx, "knob_space(entry)", function() return ctx:knob_space(e) end)
  measure(ctx, "candidate(entry)", function() return ctx:candidate(e, {}, "bench") end)
end

return {name = "ctx_roundtrip", describe = "times ctx calls", run = run}
