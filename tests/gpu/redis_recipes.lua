-- Every seed (CUDA and Triton, at the first point of its knob space) of the recipes given,
-- judged twice: by a local worker on one GPU and through Redis (docs/redis.md). Prints one line
-- per candidate and fails when a verdict differs or is not ok. Verify only (bench off): the
-- verdicts are what must agree; speed-ups are a ratio measured on whichever GPU ran the job.
-- usage: kevo script tests/gpu/redis_recipes.lua URL GPU RECIPE...
local evaluator = require "kevo.evaluator"
local url, gpu = arg[1], arg[2]
local bad = 0
for i = 3, #arg do
  local loc = assert(evaluator.new{recipe = arg[i], gpus = gpu, bench = false})
  local rem, err = evaluator.new{recipe = arg[i], eval = url, bench = false}
  if not rem then error("through Redis: " .. tostring(err), 0) end
  local list = {}
  for _, s in ipairs(loc:recipe().seeds) do
    local knobs = {}
    for k, vs in pairs(s.space or {}) do knobs[k] = vs[1] end
    list[#list + 1] = {lang = s.lang, source = s.source, knobs = knobs, launch = s.launch,
                       launch_name = s.launch_name, launch_line = s.launch_line, name = s.file}
  end
  local a, b = loc:evaluate_many(list), rem:evaluate_many(list)
  for j, c in ipairs(list) do
    local same = a[j].verdict == b[j].verdict and a[j].verdict == "ok"
    if not same then bad = bad + 1 end
    print(string.format("%-4s %-12s %-28s local %-14s redis %-14s %s", same and "ok" or "FAIL",
                        loc:recipe().name, c.name, a[j].verdict, b[j].verdict,
                        same and "" or (b[j].message or "")))
  end
  loc:close()
  rem:close()
end
os.exit(bad == 0 and 0 or 1)
