-- Evaluation throughput on one GPU and on several (kevo run --gpus): the same batch of N
-- variants of a recipe's CUDA seed judged by an evaluator with one worker and by one with a
-- worker per GPU. Each evaluator first judges the batch once (its workers start, the compiles
-- land in the cache), then judges it again, timed: what is timed is verification and timing on
-- the workers, the part --gpus spreads. Racing is off so both do the same work. Prints both
-- rates, their ratio, and whether the verdicts agree candidate by candidate.
-- usage: kevo script bench/eval_gpus.lua RECIPE N GPUS_ONE GPUS_MANY   (e.g. softmax 16 0 0,1)
local evaluator = require "kevo.evaluator"
local kevo = require "kevo"

local recipe, n, one, many = arg[1], tonumber(arg[2] or 16), arg[3] or "0", arg[4] or "all"

local function variants(ev)
  local seed
  for _, s in ipairs(ev:recipe().seeds) do if s.lang == "cuda" then seed = s break end end
  assert(seed, "the recipe has no CUDA seed")
  local names = {}
  for k in pairs(seed.space) do names[#names + 1] = k end
  table.sort(names)
  local combos = {{}}
  for _, k in ipairs(names) do
    local grown = {}
    for _, c in ipairs(combos) do
      for _, v in ipairs(seed.space[k]) do
        local c2 = {[k] = v}
        for kk, vv in pairs(c) do c2[kk] = vv end
        grown[#grown + 1] = c2
      end
    end
    combos = grown
  end
  local list = {}
  for i = 1, n do
    local knobs = {SALT = i}
    for k, v in pairs(combos[(i - 1) % #combos + 1]) do knobs[k] = v end
    list[i] = {source = seed.source, knobs = knobs, launch = seed.launch,
               launch_name = seed.launch_name, launch_line = seed.launch_line}
  end
  return list
end

local function measure(gpus)
  local ev <close> = assert(evaluator.new{recipe = recipe, gpus = gpus, race = false})
  local dev, err = ev:device()
  if not dev then return nil, err end
  local list = variants(ev)
  local warm = {}
  for i, c in ipairs(list) do -- workers up, compiles cached, references drawn (verify only)
    warm[i] = setmetatable({bench = false}, {__index = c})
  end
  ev:evaluate_many(warm)
  local t0 = kevo.clock()
  local res = ev:evaluate_many(list)
  local s = kevo.clock() - t0
  local used, worker_ms, verify_ms, bench_ms = {}, 0, 0, 0
  for _, r in ipairs(res) do
    local g = r.device and r.device.gpu or "-"
    used[g] = (used[g] or 0) + 1
    worker_ms = worker_ms + (r.ms or 0) -- the worker's own time on the request
    verify_ms = verify_ms + ((r.verify or {}).ms or 0)
    bench_ms = bench_ms + ((r.bench or {}).ms or 0)
  end
  local workers = ev:stats().workers
  return {res = res, s = s, workers = workers, used = used, dev = dev,
          worker_ms = worker_ms / n, verify_ms = verify_ms / n, bench_ms = bench_ms / n,
          busy = worker_ms / 1000 / (s * workers)}
end

local a, err = measure(one)
if not a then io.stderr:write("eval_gpus: ", tostring(err), "\n") return 77 end
local b, berr = measure(many)
if not b then io.stderr:write("eval_gpus: ", tostring(berr), "\n") return 1 end
local same, ok = 0, 0
for i = 1, n do
  if a.res[i].verdict == b.res[i].verdict then same = same + 1 end
  if a.res[i].ok then ok = ok + 1 end
end
local function uses(u)
  local parts = {}
  for g, c in pairs(u) do parts[#parts + 1] = g .. ":" .. c end
  table.sort(parts)
  return table.concat(parts, " ")
end
print(string.format("device: %s", a.dev.name))
-- worker ms: the worker's own time per evaluation (verify + bench); busy: the share of the
-- wall time the workers spent on requests (below 1: the driver kept them waiting)
print(string.format("%-12s %8s %10s %14s %10s %8s %8s %6s  %s", "--gpus", "workers", "seconds",
                    "evals/second", "worker ms", "verify", "bench", "busy",
                    "evaluations per GPU"))
for _, x in ipairs{{one, a}, {many, b}} do
  local r = x[2]
  print(string.format("%-12s %8d %10.2f %14.2f %10.1f %8.1f %8.1f %5.0f%%  %s", x[1], r.workers,
                      r.s, n / r.s, r.worker_ms, r.verify_ms, r.bench_ms, 100 * r.busy,
                      uses(r.used)))
end
print(string.format("verdicts agree: %d of %d (%d ok)", same, n, ok))
print(string.format("EVAL_GPUS_RATIO=%.2f", a.s / b.s))
return same == n and 0 or 1
