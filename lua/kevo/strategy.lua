-- kevo.strategy: loading and composing search strategies.
--
--   strategy.list()                  names of the strategies built into kevo (strategies/*.lua)
--   strategy.load(name)              a strategy table {name, describe, run} by name: under kevo
--                                    run, the project's ./strategies/NAME.lua (read by the
--                                    host, strategy.use_sources), else the built-in one; or
--                                    nil, msg, "E_ARG". Names only, never paths.
--   strategy.use_sources(fn)         the host's fn(name) -> text, chunkname | nil, msg (once)
--   strategy.from_source(text, chunkname)  a strategy from Lua text (a user's file, read by the
--                                    run driver), loaded in the current (sandboxed) state
--   strategy.compose(parts)          one strategy running parts in order on the same context:
--                                    parts = {{strategy = s, opts = {...}}, ...}
--
-- A strategy file may load and call another:
--
--   local autotune = require("kevo.strategy").load("autotune")
--   return {name = "mine", run = function(ctx, opts) ...; autotune.run(ctx, {top = 1}) end}
local core = require "kevo.strategy_core"
local search = require "kevo.search"

local M = {}
local cache = {}

local function check(s, where)
  if type(s) ~= "table" then
    return nil, "E_ARG: " .. where .. ": a strategy returns a table {name=, describe=, run=}",
      "E_ARG"
  end
  if type(s.run) ~= "function" then
    return nil, "E_ARG: " .. where .. ": the strategy table has no run function", "E_ARG"
  end
  if s.name ~= nil and type(s.name) ~= "string" then
    return nil, "E_ARG: " .. where .. ": name must be a string", "E_ARG"
  end
  s.name = s.name or where:match("([^/]+)%.lua$") or where
  s.describe = s.describe or ""
  return s
end

function M.from_source(text, chunkname)
  local f, err = load(text, chunkname, "t")
  if not f then return nil, "E_ARG: " .. err, "E_ARG" end
  local ok, s = pcall(f)
  if not ok then return nil, "E_ARG: " .. tostring(s), "E_ARG" end
  return check(s, (chunkname:gsub("^[@=]", "")))
end

-- Where strategy.load finds a strategy's text: the host's function (kevo run: the project's
-- ./strategies, then the built-ins), else the built-ins alone. Set once.
local sources

function M.use_sources(fn)
  if type(fn) ~= "function" then error("strategy.use_sources: a function expected", 2) end
  if sources and sources ~= fn then error("strategy.use_sources: already set", 2) end
  sources = fn
end

local function builtin_source(name)
  local text, path = core.source(name)
  if not text then
    return nil,
      "no strategy named '" .. name .. "' (built in: " .. table.concat(core.list(), ", ") ..
                "; a file path is given on the command line)"
  end
  return text, "@" .. path
end

function M.load(name)
  if type(name) ~= "string" then error("strategy.load: a name expected", 2) end
  if cache[name] then return cache[name] end
  local text, chunk = (sources or builtin_source)(name)
  if not text then return nil, "E_ARG: " .. tostring(chunk), "E_ARG" end
  local s, msg, code = M.from_source(text, chunk)
  if not s then return nil, msg, code end
  cache[name] = s
  return s
end

function M.list()
  return core.list()
end

-- One line of description: the first comment line of a strategy's source, after "<name>: ".
function M.describe_line(name)
  local text = core.source(name)
  if not text then return nil end
  return text:match("^%-%-%s*[%w_]+:%s*([^\n]*)")
end

-- Runs parts in order on one context. Each part but the last gets an equal share of what is
-- left of the evaluation and time budgets when it starts; the last gets the rest. A part ends
-- when it returns, when its share is spent, or when the token budget is spent (so beam+autotune
-- goes on tuning after the LLM budget is gone); a stop of the whole run ends everything.
function M.compose(parts)
  local names = {}
  for i, p in ipairs(parts) do names[i] = p.strategy.name end
  local name = table.concat(names, "+")
  return {
    name = name,
    describe = "runs " .. table.concat(names, ", then ") .. " on one run",
    run = function(ctx, _)
      for i, p in ipairs(parts) do
        local left = ctx:budget_left()
        local limits = {}
        if i < #parts then
          local share = #parts - i + 1
          if left.evals then limits.evals = math.max(1, left.evals // share) end
          if left.seconds then limits.seconds = left.seconds / share end
        end
        ctx.phase = p.strategy.name
        ctx:log("%s: part %d of %d: %s", name, i, #parts, p.strategy.name)
        local ok, e = ctx:with_limits(limits, p.strategy.run, ctx, p.opts or {})
        if not ok then ctx:log("%s: %s ended (%s)", name, p.strategy.name, tostring(e)) end
      end
      ctx.phase = nil
    end,
  }
end

M.is_stop = search.is_stop

return M
