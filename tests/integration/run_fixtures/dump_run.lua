-- kevo script dump_run.lua DB RUN: one line per candidate of RUN (id, parent, origin, knobs,
-- source hash, verdict), then "status <run status>". Fails when a parent link is broken.
local archive = require "kevo.archive"
local json = require "kevo.json"
local db = assert(archive.open(arg[1]))
local run = math.tointeger(tonumber(arg[2]))
local info = assert(db:run(run), "no run " .. tostring(run))
local ids = {}
local function h(s) local x = 0 for i = 1,
  #s do x = (x * 31 + s:byte(i)) % 1000000007 end return x end
local n = 0
for _, c in ipairs(db:candidates(run)) do
  n = n + 1
  if c.parent and c.parent ~= json.null then
    assert(ids[c.parent],
      "candidate " .. c.id .. ": parent " .. tostring(c.parent) ..
      " is not an earlier candidate of the run")
  end
  ids[c.id] = true
  local knobs = type(c.knobs) == "string" and json.decode(c.knobs) or c.knobs or {}
  local names = {}
  for k in pairs(knobs) do names[#names + 1] = k end
  table.sort(names)
  local kv = {}
  for i, k in ipairs(names) do kv[i] = k .. "=" .. tostring(knobs[k]) end
  local evs = db:evaluations(c.id)
  assert(#evs == 1, "candidate " .. c.id .. " has " .. #evs .. " evaluations")
  print(string.format("cand %s %s %s %s %s", c.origin, table.concat(kv, ","), h(c.source),
                      evs[1].verdict,
                      c.parent ~= nil and c.parent ~= json.null and "child" or "root"))
end
print("count " .. n)
print("status " .. tostring(info.status))
