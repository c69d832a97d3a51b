-- kevo.searchutil: the plain functions of the search API, shared by the host's context
-- (kevo.search) and the strategy process (kevo.remote): stops, knob values and spaces, the order
-- of entries, feedback text. Nothing here holds or reaches anything: it is data in, data out.
local M = {}

---------------------------------------------------------------------------------------------
-- Stops
local Stop = {}
Stop.__index = Stop
Stop.__tostring = function(s)
  return "search stopped: " .. s.reason .. (s.message and (": " .. s.message) or "")
end

-- Reasons that end the whole run (others end only the current phase or strategy part).
-- journal_end and replay end a replay (kevo replay): the journal of a run cut short ends, or a
-- diverged replay has gone on offline long enough.
M.GLOBAL_STOP = {evals = true, time = true, interrupted = true, no_gpu = true,
                 journal_end = true, replay = true}

-- A stop object (not raised): what a stop's fields become again after crossing a process.
function M.stop_object(reason, message, depth)
  return setmetatable({reason = reason, message = message, depth = depth}, Stop)
end

-- depth: for "phase", the with_limits level whose budget ended (1 the outermost).
local function stop(reason, message, depth)
  error(M.stop_object(reason, message, depth), 0)
end

function M.is_stop(e)
  return getmetatable(e) == Stop
end

function M.is_global_stop(e)
  return M.is_stop(e) and M.GLOBAL_STOP[e.reason] == true
end

M.stop = stop

-- The end of a with_limits level of depth `depth`, given pcall's packed results: true and fn's
-- results when fn returned; false, stop when the level's own budget (or the token budget, or a
-- stall) ended it. A stop of the whole run, an outer level's stop and any error propagate.
function M.end_phase(depth, res)
  if res[1] then return true, table.unpack(res, 2, res.n) end
  local e = res[2]
  if M.is_stop(e) and not M.GLOBAL_STOP[e.reason] then
    -- a stop from an outer phase belongs to the outer phase
    if e.reason == "phase" and e.depth and e.depth < depth then error(e, 0) end
    return false, e
  end
  error(e, 0)
end

---------------------------------------------------------------------------------------------
-- Knobs

-- A knob value as written in a recipe ("256", "true") becomes a number or boolean.
local function knob_value(v)
  if type(v) ~= "string" then return v end
  if v == "true" then return true end
  if v == "false" then return false end
  return math.tointeger(tonumber(v)) or tonumber(v) or v
end
M.knob_value = knob_value

-- Calls fn(knobs) for every point of an ordered space ({{name=, values=}, ...}), the last knob
-- varying fastest.
function M.each_point(space, fn)
  local idx = {}
  for i = 1, #space do idx[i] = 1 end
  while true do
    local k = {}
    for i, knob in ipairs(space) do k[knob.name] = knob.values[idx[i]] end
    fn(k)
    local i = #space
    while i >= 1 do
      idx[i] = idx[i] + 1
      if idx[i] <= #space[i].values then break end
      idx[i] = 1
      i = i - 1
    end
    if i < 1 then return end
  end
end

-- Normalizes a space given as an ordered list {{name=, values=}} or a map {NAME = {values}}
-- (sorted by name) into the ordered list form.
function M.normalize_space(space)
  local out = {}
  if not space then return out end
  if space[1] ~= nil or next(space) == nil then
    for _, k in ipairs(space) do
      local vals = {}
      for i, v in ipairs(k.values) do vals[i] = knob_value(v) end
      out[#out + 1] = {name = k.name, values = vals}
    end
  else
    local names = {}
    for name in pairs(space) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do
      local vals = {}
      for i, v in ipairs(space[name]) do vals[i] = knob_value(v) end
      out[#out + 1] = {name = name, values = vals}
    end
  end
  return out
end

-- Canonical text of a knob assignment (sorted by name), for identity and display.
local function knobs_key(knobs)
  if not knobs then return "" end
  local names = {}
  for k in pairs(knobs) do names[#names + 1] = k end
  table.sort(names)
  local parts = {}
  for i, k in ipairs(names) do parts[i] = k .. "=" .. tostring(knobs[k]) end
  return table.concat(parts, ",")
end
M.knobs_key = knobs_key

-- Sort order for entries: higher score first, then earlier evaluation (stable, deterministic).
function M.better(a, b)
  if a.score ~= b.score then return (a.score or -math.huge) > (b.score or -math.huge) end
  return (a.n or math.huge) < (b.n or math.huge) -- one --time left unevaluated has no n
end

-- Text for the next prompt about an entry: its verdict, message, timing and the evaluator's
-- feedback (compile diagnostics, the worst mismatch, ...).
function M.feedback_text(e)
  if not e then return nil end
  local parts = {}
  if e.ok then
    local b = e.bench or {}
    parts[1] = string.format("The kernel verified. Time %.4f ms, %.2fx the reference%s.",
                             b.median_ms or 0, b.speedup or 0,
                             b.roofline_pct and
                               string.format(", %.0f%% of roofline", b.roofline_pct) or "")
  else
    parts[1] = string.format("The kernel failed (%s at stage %s): %s", e.verdict or "error",
                             e.stage or "?", e.message or "")
  end
  if e.feedback and e.feedback ~= e.message then parts[#parts + 1] = e.feedback end
  return table.concat(parts, "\n")
end

-- "1.84x, 1.52x" for a list of entries (logs).
function M.describe_scores(list)
  local o = {}
  for i, e in ipairs(list) do
    o[i] = e.ok and string.format("%.3gx", e.score or 0) or (e.verdict or "?")
  end
  return #o > 0 and table.concat(o, ", ") or "(empty)"
end

return M
