-- kevo.remote: the strategy's side of the boundary. It runs in the strategy process
-- (runtime/cmd_strategyproc.c), a confined process that holds nothing: no archive, no LLM, no
-- compiler, no evaluator, no files, no environment. The host (lua/kevo/boundary.lua) holds
-- those and the real search context; here the strategy gets a stand-in context whose every
-- method is a message to the host, answered with plain data.
--
-- Messages (JSON, one frame each; runtime/proto.h):
--   to the host:   {op="hello", confined=, landlock=}    once, first
--                  {op="source", name=}                   -> {text=, chunk=} | {err=}
--                  {op="loaded", parts={{name, describe, options}} | error=}
--                  {op="call", m=METHOD, a={args...}, n=#args, g={rng states}}  -> a reply
--                  {op="log", line=}                      one way
--                  {op="done", ok=true | ok=false, error= | stop={reason, message, depth}}
--   from the host: {op="load", parts={{builtin=NAME} | {source=TEXT, chunk="@path"}}}
--                  {op="check", part=, key=, value=} -> {op="checked", want=nil|TEXT}: a --set
--                  value against the part's option_values function
--                  {op="run", task=, seeds=, seed=, llm=, run=, methods={...}, opts={{...}, ...}}
--                  replies {r={results...}, n=, g={rng states}, s={best, evals, tokens,
--                  proposals}} | {err=MESSAGE, s=} | {stop={reason, message, depth}, s=},
--                  each with w=true when the next wait for a reply may spin (runtime/proto.h)
--
-- Values: nil in an argument or result list is json.null; an entry the host has sent before
-- is {["$e"] = ref} (so the same entry is the same table here, as in one process), a new one
-- {["$E"] = entry, ["$k"] = ref}, ref being the host's number for it; a generator (kevo.rng) is
-- {["$rng"] = i}, i indexing g, whose states go to
-- the host and come back advanced (ctx.rng is always g[1], false when it has not moved since
-- the last exchange: the host's copy is the same); a stop returned as a value (not
-- raised) is {["$stop"] = {reason, message, depth}}.
local json = require "kevo.json"
local util = require "kevo.searchutil"
local rngmod = require "kevo.rng"

local M = {}

local MAX_DEPTH = 64
local MAX_LINE = 4000
local MAX_ERROR = 8000

-- The kevo.search a strategy requires here: the plain functions, no context constructor.
M.search = {rng = rngmod.new}
for k, v in pairs(util) do M.search[k] = v end
M.search.new = function()
  error("search.new: a strategy gets its context from kevo run; it cannot make one", 2)
end

local link           -- {send, recv}: the frame pipe to the host (never reachable by a strategy)
local entries = {}   -- the host's ref -> entry table, as the host sent it
local entry_id = setmetatable({}, {__mode = "k"}) -- entry table -> the host's ref

local function send(msg)
  link.send(json.encode(msg))
end

local function cut(s, n)
  s = tostring(s)
  if #s > n then return s:sub(1, n) .. "... (" .. #s .. " bytes)" end
  return s
end

-- Plain data for the host: interned entries by id, generators by index into rngs.
local function encode(v, rngs, depth)
  if type(v) ~= "table" then
    if v == nil then return json.null end
    local t = type(v)
    if t == "string" or t == "number" or t == "boolean" then return v end
    error("a " .. t .. " cannot be sent to the host (plain data only)", 0)
  end
  if depth > MAX_DEPTH then error("a value nested too deep to send to the host", 0) end
  local id = entry_id[v]
  if id then return {["$e"] = id} end
  if rngmod.is_rng(v) then
    for i, r in ipairs(rngs) do if r == v then return {["$rng"] = i} end end
    rngs[#rngs + 1] = v
    return {["$rng"] = #rngs}
  end
  local o = {}
  local n = #v
  if n > 0 then
    for i = 1, n do o[i] = encode(v[i], rngs, depth + 1) end
    for k in pairs(v) do
      if math.type(k) ~= "integer" or k < 1 or k > n then
        error("a table mixing list and named fields cannot be sent to the host", 0)
      end
    end
    return json.array(o)
  end
  for k, x in pairs(v) do
    if type(k) ~= "string" then error("table keys sent to the host must be strings", 0) end
    o[k] = encode(x, rngs, depth + 1)
  end
  return o
end

-- Plain tables from the host's data; {"$e"} entries looked up (intern() has taken the new
-- ones, {"$E"}, out of the whole message first: the host walks tables in its own order).
local function decode(v, depth)
  if v == json.null then return nil end
  if type(v) ~= "table" then return v end
  if depth > MAX_DEPTH + 8 then return nil end
  local ref = rawget(v, "$e") or rawget(v, "$k")
  if ref ~= nil then return entries[ref] end
  local st = rawget(v, "$stop")
  if type(st) == "table" then
    return util.stop_object(tostring(st.reason), st.message ~= json.null and st.message or nil,
                            math.tointeger(st.depth))
  end
  local o = {}
  for k, x in pairs(v) do o[k] = decode(x, depth + 1) end
  return o
end

local function intern(v, depth)
  if type(v) ~= "table" or depth > MAX_DEPTH + 8 then return end
  local full, ref = rawget(v, "$E"), rawget(v, "$k")
  if type(full) == "table" and ref ~= nil then
    if not entries[ref] then
      local e = decode(full, depth + 1)
      entries[ref] = e
      entry_id[e] = ref
    end
    return
  end
  for _, x in pairs(v) do intern(x, depth + 1) end
end

local ctx -- the stand-in context
local synced = {} -- ctx.rng's state as the host last saw it

-- ctx's fields the host owns, as of its last reply.
local function take_state(s)
  if type(s) ~= "table" then return end
  ctx.best = decode(s.best, 0)
  ctx.evals, ctx.tokens, ctx.proposals = s.evals or ctx.evals, s.tokens or ctx.tokens,
                                         s.proposals or ctx.proposals
end

-- One method call on the host's context.
local function call(name, ...)
  local args = table.pack(...)
  local rngs = {ctx.rng}
  local a = {}
  for i = 1, args.n do a[i] = encode(args[i], rngs, 1) end
  local g = {}
  for i, r in ipairs(rngs) do g[i] = rngmod.state(r) end
  local s = ctx.rng.s
  if s[1] == synced[1] and s[2] == synced[2] and s[3] == synced[3] and s[4] == synced[4] then
    g[1] = false -- ctx.rng has not moved since the host last saw it
  end
  send({op = "call", m = name, a = json.array(a), n = args.n, g = json.array(g)})
  local text = link.recv()
  local reply = json.decode(text)
  link.spin(reply.w == true)
  if text:find('"$E"', 1, true) then intern(reply, 0) end
  for i, st in ipairs(type(reply.g) == "table" and reply.g or {}) do
    if rngs[i] and st then rngmod.restore(rngs[i], st) end
  end
  s = ctx.rng.s
  synced[1], synced[2], synced[3], synced[4] = s[1], s[2], s[3], s[4]
  take_state(reply.s)
  if reply.stop then
    local stop = reply.stop
    util.stop(stop.reason, stop.message ~= json.null and stop.message or nil,
              stop.depth ~= json.null and stop.depth or nil)
  end
  if reply.err then error(reply.err, 0) end
  local r = reply.r or {}
  local out = {}
  -- plain data (no entry, stop or null anywhere in the text) is used as decoded
  local plain = not text:find('"$', 1, true) and not text:find("null", 1, true)
  for i = 1, reply.n or 0 do out[i] = plain and r[i] or decode(r[i], 0) end
  return table.unpack(out, 1, reply.n or 0)
end

local Ctx = {}

-- with_limits runs the strategy's function here; the host keeps the level's budget.
function Ctx:with_limits(limits, fn, ...)
  if type(limits) ~= "table" then error("ctx:with_limits: a limits table expected", 2) end
  if type(fn) ~= "function" then error("ctx:with_limits: a function expected", 2) end
  local depth = call("_push_limits", {evals = limits.evals, seconds = limits.seconds})
  local res = table.pack(pcall(fn, ...))
  call("_pop_limits", depth)
  return util.end_phase(depth, res)
end

function Ctx:log(fmt, ...)
  local line = select("#", ...) > 0 and string.format(fmt, ...) or tostring(fmt)
  send({op = "log", line = cut(line, MAX_LINE)})
end

local function make_ctx(run)
  local methods = {}
  intern(run, 0)
  for _, m in ipairs(run.methods or {}) do
    if Ctx[m] == nil then methods[m] = function(_, ...) return call(m, ...) end end
  end
  for k, f in pairs(Ctx) do methods[k] = f end
  local seeds = decode(run.seeds, 0) or {}
  return setmetatable({task = decode(run.task, 0) or {}, seeds = seeds, llm = run.llm == true,
                       run = decode(run.run, 0), best = nil,
                       rng = rngmod.restore(nil, run.rng) or rngmod.new(run.seed or 1),
                       evals = 0, tokens = 0, proposals = 0},
                      {__index = methods})
end

-- What a failed strategy leaves: its stop, or its error's text (bounded).
local function failure(e)
  if util.is_stop(e) then
    return {op = "done", ok = false, stop = {reason = tostring(e.reason),
                                             message = e.message and cut(e.message, MAX_LINE),
                                             depth = math.type(e.depth) and e.depth or nil}}
  end
  local ok, text = pcall(tostring, e)
  return {op = "done", ok = false, error = cut(ok and text or "(an error object)", MAX_ERROR)}
end

-- strategy.load(NAME) here: the host reads ./strategies/NAME.lua or takes the built-in, and
-- sends the text (a strategy names, never opens).
local function host_source(name)
  send({op = "source", name = name})
  local r = json.decode(link.recv())
  if type(r.text) == "string" then return r.text, tostring(r.chunk) end
  return nil, tostring(r.err)
end

local function load_parts(parts)
  local strategy = require "kevo.strategy"
  strategy.use_sources(host_source)
  local loaded, described = {}, {}
  for i, p in ipairs(parts) do
    local s, msg
    if p.builtin then
      s, msg = strategy.load(p.builtin)
    else
      s, msg = strategy.from_source(p.source, p.chunk)
    end
    if not s then return nil, msg end
    local opts = type(s.options) == "table" and s.options or nil
    local names = {}
    for j, o in ipairs(opts or {}) do names[j] = tostring(o) end
    -- option_values (docs/strategies.md): words and lists cross as data; a function stays
    -- here and kevo asks it (op "check")
    local values
    if type(s.option_values) == "table" then
      values = {}
      for k, spec in pairs(s.option_values) do
        if type(k) == "string" then
          if type(spec) == "function" then
            values[k] = {["$fn"] = true}
          elseif type(spec) == "string" then
            values[k] = spec
          elseif type(spec) == "table" then
            local words = {}
            for j, w in ipairs(spec) do
              words[j] = (type(w) == "number" or type(w) == "boolean") and w or tostring(w)
            end
            values[k] = json.array(words)
          end
        end
      end
    end
    loaded[i] = s
    described[i] = {name = tostring(s.name), describe = cut(s.describe or "", MAX_LINE),
                    options = opts and json.array(names) or nil, option_values = values}
  end
  return loaded, described
end

-- main(link) -> exit code. The host speaks first after hello: load, then run.
function M.main(l)
  link = l
  print = function(...) -- luacheck: ignore 121 (stdout is the host's pipe: print goes to the log)
    local t = table.pack(...)
    for i = 1, t.n do t[i] = tostring(t[i]) end
    send({op = "log", line = cut(table.concat(t, "\t", 1, t.n), MAX_LINE)})
  end
  send({op = "hello", confined = l.confined, landlock = l.landlock})
  local loaded
  while true do
    local msg = json.decode(l.recv())
    if msg.op == "load" then
      local ok, parts, described = pcall(load_parts, msg.parts)
      if ok and parts then
        loaded = parts
        send({op = "loaded", parts = json.array(described)})
      else
        send({op = "loaded", error = cut(ok and described or parts, MAX_ERROR)})
      end
    elseif msg.op == "check" and loaded then
      -- an option value against a part's option_values function: nil, or what is allowed
      local part = loaded[math.tointeger(msg.part) or 0]
      local spec = part and type(part.option_values) == "table" and part.option_values[msg.key]
      local want
      if type(spec) == "function" then
        local ok, w = pcall(spec, decode(msg.value, 0))
        want = not ok and ("valid (its check failed: " .. cut(w, MAX_LINE) .. ")") or
               (w ~= nil and cut(w, MAX_LINE) or nil)
      end
      send({op = "checked", want = want})
    elseif msg.op == "run" and loaded then
      ctx = make_ctx(msg)
      local strat, opts = loaded[1], decode(msg.opts, 0) or {}
      if #loaded > 1 then
        local parts = {}
        for i, s in ipairs(loaded) do parts[i] = {strategy = s, opts = opts[i] or {}} end
        strat = require("kevo.strategy").compose(parts)
        opts = {}
      else
        opts = opts[1] or {}
      end
      local ok, e = pcall(strat.run, ctx, opts)
      send(ok and {op = "done", ok = true} or failure(e))
      return 0
    else
      return 2
    end
  end
end

return M
