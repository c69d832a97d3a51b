-- Candidates judged per second through kevo.evaluator on one recipe (default softmax): N
-- variants of the recipe's CUDA seed over its knob space, each made unique (a SALT define) so
-- every compile is cold. Runs the batch three ways to split the time by stage:
--   cold   evaluate_many, bench on  (compile + verify + bench: the real loop)
--   verify evaluate_many, bench off (compiles now cached: verify only)
--   warm   evaluate_many, bench on  (compiles cached: verify + bench)
-- usage: kevo script bench/eval_throughput.lua RECIPE [N]
local evaluator = require "kevo.evaluator"
local kevo = require "kevo"

local recipe, n = arg[1], tonumber(arg[2] or 24)
local ev <close> = assert(evaluator.new{recipe = recipe})
local dev, err = ev:device()
if not dev then io.stderr:write("eval_throughput: ", err, "\n") return 77 end
local seed
for _, s in ipairs(ev:recipe().seeds) do if s.lang == "cuda" then seed = s break end end
assert(seed, "the recipe has no CUDA seed")

-- the knob space, as a list of assignments
local names = {}
for k in pairs(seed.space) do names[#names + 1] = k end
table.sort(names)
local combos = {{}}
for _, k in ipairs(names) do
  local next_combos = {}
  for _, c in ipairs(combos) do
    for _, v in ipairs(seed.space[k]) do
      local c2 = {}
      for kk, vv in pairs(c) do c2[kk] = vv end
      c2[k] = v
      next_combos[#next_combos + 1] = c2
    end
  end
  combos = next_combos
end

local salt = string.format("%d%06d", os.time(), math.floor((kevo.clock() % 1) * 1e6))
local function batch(bench)
  local list = {}
  for i = 1, n do
    local knobs = {SALT = salt .. i}
    for k, v in pairs(combos[(i - 1) % #combos + 1]) do knobs[k] = v end
    list[i] = {source = seed.source, knobs = knobs, bench = bench, launch = seed.launch,
               launch_name = seed.launch_name, launch_line = seed.launch_line}
  end
  return list
end

local function timed(list)
  local t0 = kevo.clock()
  local res = ev:evaluate_many(list)
  return res, kevo.clock() - t0
end

local cold, t_cold = timed(batch(true))
local _, t_verify = timed(batch(false))
local warm, t_warm = timed(batch(true))

local function median(t)
  table.sort(t)
  if #t == 0 then return 0 end
  return #t % 2 == 1 and t[(#t + 1) // 2] or (t[#t // 2] + t[#t // 2 + 1]) / 2
end
-- the worker's own stage timings and the compile times, per candidate
local function stages(res)
  local c, v, b = {}, {}, {}
  for _, r in ipairs(res) do
    c[#c + 1] = r.compile and r.compile.ms or 0
    if r.verify and r.verify.ms then v[#v + 1] = r.verify.ms end
    if r.bench and r.bench.ms then b[#b + 1] = r.bench.ms end
  end
  return median(c), median(v), median(b)
end
local ok, compile_ms, best = 0, 0, nil
local verdicts = {}
for i, r in ipairs(cold) do
  verdicts[r.verdict] = (verdicts[r.verdict] or 0) + 1
  compile_ms = compile_ms + r.compile.ms
  if r.ok then
    ok = ok + 1
    if r.bench and (not best or r.bench.median_ms < best.bench.median_ms) then
      best = r best.i = i
    end
  end
end
local vlist = {}
for v, c in pairs(verdicts) do vlist[#vlist + 1] = v .. "=" .. c end
table.sort(vlist)
local compile_wall = t_cold - t_warm  -- what the cold compiles added to the batch
local s = ev:stats()
print(string.format("device              %s", dev.name))
print(
  string.format("recipe              %s, %d candidates (%d knob combinations x salt)",
  ev:recipe().name, n, #combos))
print(string.format("verdicts            %s", table.concat(vlist, " ")))
print(
  string.format("throughput          %.2f candidates/s (cold compile + verify + bench: %.2f s)",
  n / t_cold, t_cold))
print(
  string.format(
  "stage: compile      %.1f ms per candidate (NVRTC, each); batch of %d adds %.2f s wall "
  .. "(concurrent)", compile_ms / n, n, compile_wall))
print(
  string.format("stage: verify       %.1f ms per candidate (%d shapes x 5 trials)",
  1000 * t_verify / n, cold[1].verify and cold[1].verify.shapes or 0))
print(
  string.format("stage: bench        %.1f ms per candidate (candidate and reference, interleaved)",
  1000 * (t_warm - t_verify) / n))
if best then
  local knobs = {}
  for k,
  v in pairs(batch(true)[best.i].knobs) do if k ~= "SALT" then knobs[#knobs + 1] = k .. "=" ..
  v end end
  table.sort(knobs)
  print(
    string.format(
    "best                %s: %.4g ms, %.2fx the reference, %.0f GB/s (%.0f%% of roofline)",
        table.concat(knobs, ","), best.bench.median_ms, best.bench.speedup or 0,
        best.bench.gbps or 0, best.bench.roofline_pct or 0))
end
local cm, vm, bm = stages(cold)
print(
  string.format(
  "cold cache          %.2f candidates/s; medians: compile %.1f ms, worker verify %.1f ms, worker "
  .. "bench %.1f ms", n / t_cold, cm, vm, bm))
cm, vm, bm = stages(warm)
print(
  string.format(
  "warm cache          %.2f candidates/s; medians: compile %.1f ms (cached), worker verify %.1f "
  .. "ms, worker bench %.1f ms", n / t_warm, cm, vm, bm))

-- racing: the same warm batch judged by an evaluator that times every candidate in full
local function bench_ms(res)
  local total, raced = 0, 0
  for _, r in ipairs(res) do
    total = total + (r.bench and r.bench.ms or 0)
    if r.bench and r.bench.raced then raced = raced + 1 end
  end
  return total, raced
end
do
  local full_ev <close> = assert(evaluator.new{recipe = recipe, race = false})
  local t1 = kevo.clock()
  local full = full_ev:evaluate_many(batch(true))
  local t_full = kevo.clock() - t1
  local raced_ms, nraced = bench_ms(warm)
  local full_ms = bench_ms(full)
  print(
    string.format(
    "racing              %d of %d raced; worker bench %.0f ms in all vs %.0f ms timing every "
    .. "candidate in full (%.0f%% saved); warm %.2f vs %.2f candidates/s",
        nraced, n, raced_ms, full_ms, full_ms > 0 and 100 * (1 - raced_ms / full_ms) or 0,
        n / t_warm, n / t_full))
end

-- Triton: the recipe's Triton seed over its knob space, each source made unique by a comment
local tseed
for _, sd in ipairs(ev:recipe().seeds) do if sd.lang == "triton" then tseed = sd break end end
local triton_ok = pcall(function() return require("kevo.triton").available() end) and
  require("kevo.triton").available()
if tseed and triton_ok then
  local tn = {}
  for k in pairs(tseed.space) do tn[#tn + 1] = k end
  table.sort(tn)
  local tc = {{}}
  for _, k in ipairs(tn) do
    local nx = {}
    for _, c in ipairs(tc) do
      for _, v in ipairs(tseed.space[k]) do
        local c2 = {}
        for kk, vv in pairs(c) do c2[kk] = vv end
        c2[k] = v
        nx[#nx + 1] = c2
      end
    end
    tc = nx
  end
  local function tbatch()
    local list = {}
    for i = 1, n do
      local knobs = {}
      for k, v in pairs(tc[(i - 1) % #tc + 1]) do knobs[k] = v end
      list[i] =
        {lang = "triton", source = tseed.source .. "\n# salt " .. salt .. i .. "\n", knobs = knobs,
                 name = "softmax.py", launch = tseed.launch, launch_name = tseed.launch_name,
                 launch_line = tseed.launch_line}
    end
    return list
  end
  local tcold, tt_cold = timed(tbatch())
  local twarm, tt_warm = timed(tbatch())
  local tv = {}
  for _, r in ipairs(tcold) do tv[r.verdict] = (tv[r.verdict] or 0) + 1 end
  local tl = {}
  for v, c in pairs(tv) do tl[#tl + 1] = v .. "=" .. c end
  table.sort(tl)
  cm, vm, bm = stages(tcold)
  print(string.format("triton verdicts     %s", table.concat(tl, " ")))
  print(
    string.format(
    "triton cold cache   %.2f candidates/s; medians: compile %.1f ms, worker verify %.1f ms, "
    .. "worker bench %.1f ms", n / tt_cold, cm, vm, bm))
  cm, vm, bm = stages(twarm)
  print(
    string.format(
    "triton warm cache   %.2f candidates/s; medians: compile %.1f ms (cached), worker verify %.1f "
    .. "ms, worker bench %.1f ms", n / tt_warm, cm, vm, bm))
else
  print("triton              skipped (no Triton seed or Triton not available)")
end
print(
  string.format("worker              %d spawns, %d kills, %d deaths, %d requests", s.spawns,
  s.kills, s.deaths, s.requests))
print(string.format("KEVO_SECONDS_PER_CANDIDATE=%.4f", t_cold / n))
return ok > 0 and 0 or 1
