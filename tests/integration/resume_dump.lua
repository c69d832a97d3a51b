-- kevo script resume_dump.lua DB RUN: RUN's candidates in order, each as its origin, knobs,
-- source hash, parent (its place in the run, not its id), verdict and speed-up; then the best
-- and the status. Two runs of the same search compare equal line for line. Fails when a
-- candidate has other than one evaluation or its parent is not an earlier candidate.
local archive = require "kevo.archive"
local json = require "kevo.json"
local db = assert(archive.open(arg[1], {readonly = true}))
local run = math.tointeger(tonumber(arg[2]))
local info = assert(db:run(run), "no run " .. tostring(run))
local place = {}
local function h(s)
  local x = 0
  for i = 1, #s do x = (x * 31 + s:byte(i)) % 1000000007 end
  return x
end
for i, c in ipairs(db:candidates(run)) do
  place[c.id] = i
  local parent = "-"
  if c.parent and c.parent ~= json.null then
    parent = assert(place[c.parent], "candidate " .. c.id .. ": parent is not an earlier candidate")
  end
  local knobs = type(c.knobs) == "string" and json.decode(c.knobs) or c.knobs or {}
  local names = {}
  for k in pairs(knobs) do names[#names + 1] = k end
  table.sort(names)
  local kv = {}
  for j, k in ipairs(names) do kv[j] = k .. "=" .. tostring(knobs[k]) end
  local evs = db:evaluations(c.id)
  assert(#evs == 1, "candidate " .. c.id .. " has " .. #evs .. " evaluations")
  print(string.format("%d %s %s %s parent=%s %s %s", i, c.origin, table.concat(kv, ","),
                      h(c.source), parent, evs[1].verdict,
                      evs[1].speedup and string.format("%.6g", evs[1].speedup) or "-"))
end
local best = db:best(run)
print(
  "best " .. (best and (place[best.candidate] .. string.format(" %.6g", best.speedup)) or "none"))
print("status " .. tostring(info.status))
