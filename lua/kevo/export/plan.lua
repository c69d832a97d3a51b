-- kevo.export.plan: a candidate's launch chunk resolved into a plan (docs/architecture.md
-- "Launch chunks") for one shape, for kevo export. The chunk runs with exactly the names the
-- contract gives it (params, knobs, cdiv, min, max, scalar wrappers, ptr, device), in an
-- environment of its own, text only, under an instruction budget; the archive is data a search
-- wrote, so the chunk is treated like any other untrusted text.
local M = {}

local BUDGET = 10000000 -- VM instructions

-- chunk_of(source, lang): the kevo:launch block a source carries, or nil.
function M.chunk_of(source, lang)
  local block = source:match("/%*%s*kevo:launch%s*\n(.-)%*/")
  if block then return block end
  if lang == "triton" then
    block = source:match("'''%s*kevo:launch%s*\n(.-)'''") or source:match('"""%s*kevo:launch%s*\n(.-)"""')
    if block then return block end
    local lines, on = {}, false
    for line in (source .. "\n"):gmatch("(.-)\n") do
      if line:match("^%s*#%s*kevo:launch%s*$") then on = true
      elseif on then
        local body = line:match("^%s*#%s?(.*)$")
        if not body then break end
        lines[#lines + 1] = body
      end
    end
    if #lines > 0 then return table.concat(lines, "\n") end
  end
  return nil
end

local SCALARS = {"i32", "i64", "u32", "u64", "f32", "f64"}

-- env(params, knobs, device): the names a launch chunk may read.
local function env(params, knobs, device)
  local e = {cdiv = function(a, b) return (a + b - 1) // b end, min = math.min, max = math.max,
             device = device or {}}
  for _, k in ipairs(SCALARS) do
    e[k] = function(v)
      if type(v) ~= "number" then error(k .. "(): a number expected", 2) end
      return {kind = k, value = v}
    end
  end
  e.ptr = function(name) return tostring(name) end
  for k, v in pairs(knobs or {}) do e[k] = v end
  for k, v in pairs(params or {}) do e[k] = v end
  return e
end

local function dim3(v, what)
  if type(v) == "number" then v = {v} end
  if type(v) ~= "table" or #v < 1 or #v > 3 then error(what .. ": 1 to 3 integers expected", 0) end
  local out = {}
  for i = 1, 3 do
    local x = v[i] == nil and 1 or math.tointeger(v[i])
    if not x or x < 1 then error(("%s[%d]: a positive integer expected"):format(what, i), 0) end
    out[i] = x
  end
  return out
end

local function arg_of(a, i, name)
  local t = type(a)
  if t == "string" then return {buf = a} end
  if t == "table" and a.kind then return {[a.kind] = a.value} end
  if math.type(a) == "integer" then return {i32 = a} end
  if t == "number" then return {f32 = a} end
  error(("kernel %s, argument %d: a tensor name, a wrapped scalar or a number expected"):format(name, i), 0)
end

-- resolve(chunk, params, knobs, device): the plan table, or nil, message.
function M.resolve(chunk, params, knobs, device)
  local fn, err = load(chunk, "=launch", "t", env(params, knobs, device))
  if not fn then return nil, "the launch chunk does not parse: " .. err end
  -- once spent, the hook fires at every instruction, so a pcall in the chunk cannot outlive it
  local function spent() error("the launch chunk ran past its instruction budget", 0) end
  debug.sethook(function() debug.sethook(spent, "", 1); spent() end, "", BUDGET)
  local ok, res = pcall(fn)
  debug.sethook()
  if not ok then return nil, "the launch chunk failed: " .. tostring(res) end
  local ok2, plan = pcall(function()
    if type(res) ~= "table" or type(res.kernels) ~= "table" or #res.kernels == 0 then
      error("it must return {kernels = {...}}", 0)
    end
    local p = {kernels = {}, scratch = {}}
    for k, l in ipairs(res.kernels) do
      if type(l.name) ~= "string" then error(("kernel %d has no name"):format(k), 0) end
      local args = {}
      for i, a in ipairs(l.args or {}) do args[i] = arg_of(a, i, l.name) end
      p.kernels[k] = {module = 0, name = l.name, grid = dim3(l.grid, "grid"), block = dim3(l.block, "block"),
                      shared = math.tointeger(l.shared or 0) or error("shared: an integer expected", 0),
                      args = args}
    end
    local names = {}
    for name in pairs(res.scratch or {}) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do
      local s = res.scratch[name]
      p.scratch[#p.scratch + 1] = {name = name, bytes = math.tointeger(s.bytes) or error("scratch bytes", 0),
                                   zero = s.zero and true or false}
    end
    return p
  end)
  if not ok2 then return nil, "the launch chunk's result: " .. tostring(plan) end
  return plan
end

return M
