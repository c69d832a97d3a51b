-- kevo script gpus_dump.lua DB RUN: RUN's journal as `kevo run --gpus` must keep it (docs/resume.md
-- "Many GPUs"), one line per evaluation in journal order: the batch's number, the candidate's
-- place in the run, its knobs, verdict and speed-up; then one line per GPU that measured
-- something ("gpu NAME COUNT"). Two runs of one sweep on one GPU and on many, resumed or not,
-- print the same evaluation lines.
local archive = require "kevo.archive"
local json = require "kevo.json"
local db = assert(archive.open(arg[1], {readonly = true}))
local run = math.tointeger(tonumber(arg[2]))
local place = {}
for i, c in ipairs(db:candidates(run)) do place[c.id] = i end
local batch, used = 0, {}
for _, kind, request, response in db:journal(run) do
  if kind == "evaluate" then
    batch = batch + 1
    local req, resp = json.decode(request), json.decode(response)
    for j, r in ipairs(resp.results) do
      local c = req.cands and req.cands[j] or {}
      print(string.format("batch %d #%s %s %s %s", batch, tostring(place[resp.ids[j]]),
                          json.encode(c.knobs or {}, {canonical = true}), r.verdict,
                          r.bench and r.bench.speedup and string.format("%.3f", r.bench.speedup)
                          or "-"))
      local gpu = r.device and r.device.gpu
      if gpu then used[gpu] = (used[gpu] or 0) + 1 end
    end
  end
end
local names = {}
for g in pairs(used) do names[#names + 1] = g end
table.sort(names)
for _, g in ipairs(names) do print(string.format("gpu %s %d", g, used[g])) end
