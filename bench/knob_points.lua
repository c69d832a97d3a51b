-- Judges chosen knob points of kernel files for one recipe, in one evaluator, every candidate
-- timed in full (no racing), and prints a line per point: verdict, median, % of roofline,
-- speed-up over the reference. For comparing variants of a seed on a GPU in one short run.
-- usage: kevo script bench/knob_points.lua RECIPE.yaml FILE "K=V K=V ..." [FILE "K=V ..."] ...
--   (an empty string: the seed's first point; a knob left out takes its first value)
local evaluator = require "kevo.evaluator"
local recipe = assert(arg[1], "usage: knob_points.lua RECIPE.yaml FILE KNOBS [FILE KNOBS] ...")
local ev <close> = assert(evaluator.new{recipe = recipe, race = false})
-- a knob the spec leaves out takes the first value of the seed's space when the file is a seed
-- of the recipe (a Triton kernel has no source defaults for its constexprs)
local spaces = {}
for _, sd in ipairs(ev:recipe().seeds) do spaces[sd.file] = sd.space end
local function seed_space(file)
  for f, sp in pairs(spaces) do
    if file == f or file:sub(-#f - 1) == "/" .. f then return sp end
  end
end
local cands, labels = {}, {}
for i = 2, #arg - 1, 2 do
  local file, spec = arg[i], arg[i + 1]
  local f = assert(io.open(file))
  local text = f:read("a")
  f:close()
  local knobs = {}
  for k, v in spec:gmatch("([%w_]+)=([^%s]+)") do knobs[k] = tonumber(v) or v end
  for k, vs in pairs(seed_space(file) or {}) do
    if knobs[k] == nil then knobs[k] = vs[1] end
  end
  cands[#cands + 1] = {lang = file:match("%.py$") and "triton" or "cuda", source = text,
                       knobs = knobs, bench = true, name = file:match("[^/]+$")}
  labels[#labels + 1] = file:match("[^/]+$") .. " " .. spec
end
-- one at a time, each line printed as it comes (a run cut by a time limit keeps what it had)
for i, cand in ipairs(cands) do
  local res = ev:evaluate(cand)
  local b = res.bench or {}
  if res.verdict == "ok" and b.median_ms then
    print(string.format("%-40s ok %9.4f ms %6.1f%% roof %6.3fx", labels[i], b.median_ms,
      b.roofline_pct or 0, b.speedup or 0))
  else
    print(string.format("%-40s %s: %s", labels[i], res.verdict, res.message or ""))
  end
  io.stdout:flush()
end
