-- kevo script suite_dump.lua DB: the suite in DB (its only one) as tests/gpu/test_suite_gpus.sh
-- compares it. One line per evaluation, in suite order (problem, then the run's candidates):
--   eval PROBLEM HASH KNOBS VERDICT
--   why PROBLEM HASH MESSAGE  after a verdict that is not ok: its message (not compared)
-- which two suites of one sweep on one GPU, on many and through Redis must print alike
-- (docs/resume.md "Many GPUs"); then, not compared:
--   gpu NAME COUNT            the GPUs that measured (device.gpu), with their evaluations
--   worker NAME COUNT         the Redis workers that did (device.worker)
--   problem I NAME WALL_S     each problem's run, created to finished
--   worker_s S                the workers' own time over every evaluation (result.ms)
local json = require "kevo.json"
local db = assert(require("kevo.archive").open(arg[1], {readonly = true}))
local runs = {}
for _, r in ipairs(db:runs()) do
  local c = json.decode(r.config)
  if type(c) == "table" and type(c.suite) == "table" then
    runs[#runs + 1] = {index = c.suite.index, row = r}
  end
end
table.sort(runs, function(a, b) return a.index < b.index end)
local gpus, workers, worker_ms = {}, {}, 0
for _, r in ipairs(runs) do
  for _, c in ipairs(db:candidates(r.row.id)) do
    local e = db:evaluations(c.id)[1]
    if e then
      local res = json.decode(e.result) or {}
      print(("eval %d %s %s %s"):format(r.index, c.source_hash:sub(1, 12), c.knobs, e.verdict))
      if e.verdict ~= "ok" then -- why, for a test that finds two suites' verdicts differ
        print(("why %d %s %s"):format(r.index, c.source_hash:sub(1, 12),
                                      tostring(res.message):gsub("%s+", " "):sub(1, 600)))
      end
      local g = type(res.device) == "table" and res.device.gpu
      if g then gpus[g] = (gpus[g] or 0) + 1 end
      local w = type(res.device) == "table" and res.device.worker
      if w then workers[w] = (workers[w] or 0) + 1 end
      if type(res.ms) == "number" then worker_ms = worker_ms + res.ms end
    end
  end
end
local names = {}
for g in pairs(gpus) do names[#names + 1] = g end
table.sort(names)
for _, g in ipairs(names) do print(("gpu %s %d"):format(g, gpus[g])) end
names = {}
for w in pairs(workers) do names[#names + 1] = w end
table.sort(names)
for _, w in ipairs(names) do print(("worker %s %d"):format(w, workers[w])) end
for _, r in ipairs(runs) do
  local a, b = tonumber(r.row.created), tonumber(r.row.finished)
  print(("problem %d %s %s"):format(r.index, r.row.recipe,
                                    a and b and ("%.1f"):format(b - a) or "-"))
end
print(("worker_s %.2f"):format(worker_ms / 1000))
