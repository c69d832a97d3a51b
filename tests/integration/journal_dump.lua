-- kevo script journal_dump.lua DB RUN: RUN's journal, one entry a line, as the strategy saw it:
-- kind, request and response with candidate ids written as their place in the run (two runs
-- of one search have other ids), without the times (t) and the llm_calls watermark (llm_id),
-- and without the `resume` entries a resume adds. A resumed run and an uninterrupted one
-- compare equal line for line.
local archive = require "kevo.archive"
local json = require "kevo.json"
local db = assert(archive.open(arg[1], {readonly = true}))
local run = math.tointeger(tonumber(arg[2]))
local place = {}
for i, c in ipairs(db:candidates(run)) do place[c.id] = i end
local function as_place(v)
  if math.type(v) == "integer" then return place[v] and ("#" .. place[v]) or ("?" .. v) end
  return v
end
local function clean(v, key)
  if type(v) ~= "table" then
    if key == "id" or key == "parent" then return as_place(v) end
    return v
  end
  local out = {}
  for k, x in pairs(v) do
    if k == "ids" and type(x) == "table" then
      local ids = {}
      for i, id in ipairs(x) do ids[i] = as_place(id) end
      out[k] = json.array(ids)
    elseif k ~= "t" and k ~= "llm_id" then
      out[k] = clean(x, k)
    end
  end
  return setmetatable(out, getmetatable(v)) -- a decoded array stays an array
end
for _, kind, request, response in db:journal(run) do
  if kind ~= "resume" then
    print(string.format("%s %s -> %s", kind,
      json.encode(clean(json.decode(request)), {canonical = true}),
      json.encode(clean(json.decode(response or "null")), {canonical = true})))
  end
end
