-- kevo.boundary: the host's side of the strategy process (lua/kevo/remote.lua is the other).
--
--   local strat, parts = boundary.load(specs, host)
--     specs: {{builtin = NAME} | {source = TEXT, chunk = "@path"}, ...}; starts the strategy
--     process and has it load them. strat = {name =, run = function(ctx, opts_per_part)};
--     parts = {{name, describe, options}, ...}. Raises {usage = message} when a part does not
--     load.
--   strat.run(ctx, opts) serves the process's ctx calls on the host's real context (kevo.search)
--     until the strategy returns; raises as the strategy did: a stop (search.is_stop), or an
--     error whose text carries the strategy's last log lines.
--
-- The process is untrusted: every message is checked; a malformed one, a method it may not
-- call, a reply it leaves unread, a run past its --time deadline (1 s of grace), a strategy that
-- goes on more than 2 s after the run was stopped (Ctrl-C, a budget), or a death, and the
-- process is killed (SIGKILL). Results, verdicts and timings stay the host's: the strategy sees
-- copies, and what it sends back names entries by the host's reference, resolved to its own.
local json = require "kevo.json"
local search = require "kevo.search"
local rngmod = require "kevo.rng"
local printable = require("kevo.sys").printable

local M = {}

M.GRACE_S = 0.5          -- past --time, the process may still return by itself
M.STOP_GRACE_S = 2.0     -- after a stop of the whole run, or Ctrl-C
local SLICE_MS = 100     -- how often the host looks at the clock while waiting (Ctrl-C cuts
                         -- the wait short: runtime/stratproc.c)
local REPLY_MS = 5000    -- a reply the process does not read in this time ends it
local TAIL = 12          -- log lines kept for the report of a strategy that dies
local MEM_BYTES = 1024 << 20
local MAX_DEPTH = 72

-- What the process may call: the context's methods, not its private ones (a leading _), and
-- the two that open and close a with_limits level (with_limits itself runs in the process).
local function callable(ctx)
  local mt = getmetatable(ctx).__index
  local names, ok = {}, {_push_limits = true, _pop_limits = true}
  for k, v in pairs(mt) do
    if type(v) == "function" and type(k) == "string" and k:sub(1, 1) ~= "_" and
      k ~= "with_limits" then
      names[#names + 1] = k
      ok[k] = true
    end
  end
  table.sort(names)
  return names, ok
end

local Session = {}
Session.__index = Session

local function misbehave(fmt, ...)
  error({misbehaved = string.format(fmt, ...)}, 0)
end

function Session:tail_add(line)
  local t = self.tail
  t[#t + 1] = line
  if #t > TAIL then table.remove(t, 1) end
end

-- The process's stderr, a line at a time, to the log (and the tail).
function Session:pump_stderr()
  local bytes, dropped = self.proc:stderr()
  if dropped and dropped > 0 then
    self:log(string.format("(%d bytes of its stderr dropped)", dropped))
  end
  if bytes == "" then return end
  -- A plain search for each newline, linear in the bytes: a pattern like "([^\n]*)\n" tries
  -- every start and scans to the end from each, and a chunk of one long line caught mid-write
  -- (64 KiB, no newline) cost 25 s of the host's time, past --time (escape case 35).
  local text = self.partial .. bytes
  local at = 1
  while true do
    local nl = text:find("\n", at, true)
    if not nl then break end
    self:log(text:sub(at, nl - 1))
    at = nl + 1
  end
  self.partial = text:sub(at, at + 4000)
end

-- Every line the strategy writes (log messages, stderr) passes here on its way to the user's
-- terminal and the run's log: cut, and with its terminal controls made visible.
function Session:log(line)
  line = printable(#line > 4000 and (line:sub(1, 4000) .. "...") or line)
  self:tail_add(line)
  if self.on_log then self.on_log(line) end
end

-- Ends the process; returns how it ended.
function Session:finish(grace_ms)
  if not self.proc then return self.how end
  self.how = self.proc:finish(grace_ms or 0)
  self:pump_stderr_final()
  self.proc = nil
  return self.how
end

function Session:pump_stderr_final()
  if self.partial ~= "" then self:log(self.partial) end
  self.partial = ""
end

-- The report of a process that died or was killed: why, how, and its last lines.
function Session:death(why, grace_ms)
  local how = self:finish(grace_ms or 200)
  local lines =
    #self.tail > 0 and ("\n  its last lines:\n    " .. table.concat(self.tail, "\n    ")) or ""
  return string.format("the strategy process %s (%s)%s", why, how, lines)
end

-- The next message, decoded and checked to be an object with an op. deadline(): seconds of the
-- monotonic clock by which one must come, or nil; it is asked again at every slice and after a
-- Ctrl-C, so the run's clock and the key press are seen while the process computes.
function Session:next_message(deadline_fn)
  while true do
    local limit, why = deadline_fn()
    local wait = SLICE_MS
    if limit then
      local left = limit - self.clock()
      if left <= 0 then error({killed = why}, 0) end
      wait = math.max(1, math.min(SLICE_MS, math.ceil(left * 1000)))
    end
    local text, msg, code = self.proc:recv(wait)
    self:pump_stderr()
    if text then
      local ok, m = pcall(json.decode, text)
      if not ok or type(m) ~= "table" or type(m.op) ~= "string" then
        misbehave("sent a message that is not a JSON object with an op")
      end
      -- plain data (no entry or generator reference, no null) is used as decoded
      self.plain = not text:find('"$', 1, true) and not text:find("null", 1, true)
      return m
    end
    if code == "E_IO" then error({died = "ended"}, 0) end
    if code ~= "E_TIMEOUT" then misbehave("%s", tostring(msg)) end
  end
end

function Session:send(msg)
  local ok, err = self.proc:send(json.encode(msg), REPLY_MS)
  if not ok then misbehave("did not read its reply (%s)", tostring(err)) end
  self.replied_at = self.clock()
end

-- Answers the messages that may come at any time: a log line, and strategy.load(NAME)'s
-- request for a strategy's text (opts.source(NAME): names only, the host reads the file).
-- Returns true when msg was one of them.
function Session:side_message(msg)
  if msg.op == "log" then
    self:log(type(msg.line) == "string" and msg.line or "?")
    return true
  elseif msg.op == "source" then
    local text, chunk
    if type(msg.name) ~= "string" then
      chunk = "strategy.load: a name expected"
    elseif self.source then
      text, chunk = self.source(msg.name)
    else
      text, chunk = require("kevo.strategy_core").source(msg.name)
      chunk = text and ("@" .. chunk) or chunk
    end
    self:send(text and {text = text, chunk = chunk} or {err = tostring(chunk)})
    return true
  end
  return false
end

-- A --set value against a part's option_values function, which runs in the process: nil, or
-- the text of what is allowed.
function Session:check_option(part, key, value)
  local ok, r = pcall(function()
    self:send({op = "check", part = part, key = key, value = self:encode_plain(value)})
    local t0 = self.clock()
    local m
    repeat
      m = self:next_message(function() return t0 + 10, "took over 10 s to check an option" end)
    until not self:side_message(m)
    if m.op ~= "checked" then misbehave("answered check with '%s'", tostring(m.op)) end
    return m
  end)
  if not ok then
    if type(r) == "table" then
      error(self:death(r.killed or r.misbehaved or r.died or "failed", r.died and 200 or 0), 0)
    end
    error(r, 0)
  end
  return type(r.want) == "string" and r.want or nil
end

-- A plain value (an option's) as JSON data.
function Session:encode_plain(v)
  if type(v) == "string" or type(v) == "number" or type(v) == "boolean" then return v end
  return json.null
end

-- Starts the process and has it load the parts. Raises {usage = msg} when one does not load.
function M.start(specs, opts)
  local stratproc = require "kevo.stratproc"
  local proc, err = stratproc.start{seed = opts.seed or 1, cpu_s = opts.cpu_s or 3600,
                                    mem_bytes = opts.mem_bytes or MEM_BYTES}
  if not proc then error("cannot start the strategy process: " .. tostring(err), 0) end
  local s = setmetatable({proc = proc, tail = {}, partial = "", on_log = opts.on_log,
                          source = opts.source,
                          clock = require("kevo").clock}, Session)
  local t0 = s.clock()
  local ok, e = pcall(function()
    local hello = s:next_message(function() return t0 + 10, "did not start in 10 s" end)
    if hello.op == "fatal" then
      error({died = "could not confine itself: " .. tostring(hello.error)}, 0)
    end
    if hello.op ~= "hello" then misbehave("did not say hello") end
    s.confined = type(hello.confined) == "string" and hello.confined or "?"
    s.landlock = math.tointeger(hello.landlock) or 0
    if s.landlock == 0 then s:log("kevo: warning: " .. s.confined) end
    s:send({op = "load", parts = json.array(specs)})
    local t1 = s.clock()
    local r
    repeat -- loading may ask for other strategies by name, and log
      r = s:next_message(function() return t1 + 30, "took over 30 s to load the strategy" end)
    until not s:side_message(r)
    if r.op == "fatal" then error({usage = tostring(r.error)}, 0) end
    if r.op ~= "loaded" then misbehave("answered load with '%s'", r.op) end
    if r.error then error({usage = tostring(r.error)}, 0) end
    if type(r.parts) ~= "table" or #r.parts ~= #specs then misbehave("loaded the wrong parts") end
    local parts = {}
    for i, p in ipairs(r.parts) do
      if type(p) ~= "table" or type(p.name) ~= "string" then
        misbehave("described part %d badly", i)
      end
      local options
      if type(p.options) == "table" then
        options = {}
        for j, o in ipairs(p.options) do options[j] = tostring(o) end
      end
      local values
      if type(p.option_values) == "table" then
        values = {}
        for k, spec in pairs(p.option_values) do
          if type(spec) == "table" and spec["$fn"] then
            values[k] = function(v) return s:check_option(i, k, v) end
          elseif type(spec) == "string" then
            values[k] = spec
          elseif type(spec) == "table" then
            values[k] = {}
            for j, w in ipairs(spec) do values[k][j] = w end
          end
        end
      end
      parts[i] = {name = p.name, describe = type(p.describe) == "string" and p.describe or "",
                  options = options, option_values = values}
    end
    s.parts = parts
  end)
  if not ok then
    if type(e) == "table" and e.usage then
      s:finish(0)
      error(e, 0)
    end
    local why = type(e) == "table" and (e.misbehaved or e.died or e.killed) or tostring(e)
    error(s:death(why), 0)
  end
  return s
end

---------------------------------------------------------------------------------------------
-- Serving the context

-- Host data for the process: an entry of this context (ctx._entries[e.n] == e) goes whole the
-- first time, {"$E" = data, "$k" = ref}, and as {"$e" = ref} after (a reference of the host's:
-- a promoted candidate has two entries under one id).
function Session:encode(v, depth)
  if v == nil then return json.null end
  if type(v) ~= "table" then return v end
  if depth > MAX_DEPTH then return json.null end
  local ref = self.ref_of[v]
  if ref then return {["$e"] = ref} end
  if math.type(v.n) == "integer" and v.candidate ~= nil and self.ctx._entries[v.n] == v then
    ref = #self.by_ref + 1
    self.by_ref[ref], self.ref_of[v] = v, ref
    local o = {}
    for k, x in pairs(v) do
      if type(k) == "string" then o[k] = self:encode(x, depth + 1) end
    end
    return {["$E"] = o, ["$k"] = ref}
  end
  if search.is_stop(v) then -- a stop handed back as a value, not raised
    return {["$stop"] = {reason = v.reason, message = v.message, depth = v.depth}}
  end
  if rngmod.is_rng(v) then
    for i, r in ipairs(self.rngs) do if r == v then return {["$rng"] = i} end end
    return json.null -- a generator of the host's own: the process has no use for it
  end
  local o = {}
  local n = #v
  if n > 0 then
    for i = 1, n do o[i] = self:encode(v[i], depth + 1) end
    return json.array(o)
  end
  for k, x in pairs(v) do
    if type(k) == "string" then o[k] = self:encode(x, depth + 1) end
  end
  return o
end

-- The process's data for the host's context: {"$e": id} is the host's own entry, {"$rng": i}
-- the generator whose state came in g[i].
function Session:decode(v, depth)
  if v == json.null then return nil end
  if type(v) ~= "table" then return v end
  if depth > MAX_DEPTH then misbehave("sent a value nested too deep") end
  local ref = rawget(v, "$e")
  if ref ~= nil then
    local e = math.type(ref) == "integer" and self.by_ref[ref]
    if not e then error("no entry " .. tostring(ref) .. " was given to this strategy", 0) end
    return e
  end
  local ri = rawget(v, "$rng")
  if ri ~= nil then
    local r = math.type(ri) == "integer" and self.rngs[ri]
    if not r then misbehave("named a generator it did not send") end
    return r
  end
  local o = {}
  for k, x in pairs(v) do o[k] = self:decode(x, depth + 1) end
  return o
end

-- The context's fields the process mirrors, when they changed since the last reply (nil: none).
function Session:state()
  local c, last = self.ctx, self.last_state
  local best_id = c.best and c.best.id
  if last and last[1] == best_id and last[2] == c.evals and last[3] == c.tokens and
     last[4] == c.proposals then
    return nil
  end
  self.last_state = {best_id, c.evals, c.tokens, c.proposals}
  return {best = self:encode(c.best, 0), evals = c.evals, tokens = c.tokens,
    proposals = c.proposals}
end

-- One call: checked, run on the real context, answered. A stop of the whole run starts the
-- clock on the process: it must return within STOP_GRACE_S.
function Session:dispatch(msg)
  local ctx = self.ctx
  local m = msg.m
  if type(m) ~= "string" or not self.allowed[m] then
    misbehave("called ctx:%s, which it may not", tostring(m))
  end
  local n = math.tointeger(msg.n)
  if not n or n < 0 or n > 64 or type(msg.a) ~= "table" or type(msg.g) ~= "table" or #msg.g < 1 or
    #msg.g > 64 then
    misbehave("sent a malformed call")
  end
  self.rngs = {}
  for i = 1, #msg.g do
    local st = msg.g[i]
    local r = (i == 1 and st == false) and ctx.rng or rngmod.restore(i == 1 and ctx.rng or nil, st)
    if not r then misbehave("sent a malformed generator") end
    self.rngs[i] = r
  end
  local r0 = ctx.rng.s
  local before1, before2, before3, before4 = r0[1], r0[2], r0[3], r0[4]
  local reply
  local ok, res = pcall(function()
    local args = {}
    for i = 1, n do args[i] = self.plain and msg.a[i] or self:decode(msg.a[i], 0) end
    if m == "_push_limits" then
      local l = type(args[1]) == "table" and args[1] or {}
      local lim = {evals = math.tointeger(l.evals), seconds = tonumber(l.seconds)}
      local p = ctx:_push_limits(lim)
      return table.pack(p.depth)
    elseif m == "_pop_limits" then
      local p = ctx._phase
      if not p or p.depth ~= args[1] then
        error("ctx: with_limits levels closed out of order", 0)
      end
      ctx._phase = p.parent
      return table.pack()
    end
    return table.pack(ctx[m](ctx, table.unpack(args, 1, n)))
  end)
  local g = {}
  for i, r in ipairs(self.rngs) do g[i] = rngmod.state(r) end
  r0 = ctx.rng.s
  if r0[1] == before1 and r0[2] == before2 and r0[3] == before3 and r0[4] == before4 then
    g[1] = false -- unmoved: the process's copy is the same
  end
  if ok then
    local r = {}
    for i = 1, res.n do r[i] = self:encode(res[i], 0) end
    reply = {r = json.array(r), n = res.n, g = json.array(g), s = self:state()}
  elseif search.is_stop(res) then
    if search.is_global_stop(res) and not self.stopped then
      self.stopped = {stop = res, at = self.clock()}
    end
    self.last_stop = res
    reply = {stop = {reason = res.reason, message = res.message, depth = res.depth},
             g = json.array(g), s = self:state()}
  elseif type(res) == "table" and res.misbehaved then
    error(res, 0)
  elseif type(res) == "string" then
    reply = {err = res, g = json.array(g), s = self:state()}
  else
    error(res, 0) -- the host's own failure (a journal divergence, the archive): not the strategy's
  end
  self.rngs = {}
  -- w: the process may spin for its next reply (a CPU is idle: runtime/stratproc.c)
  if self.proc:spin_allowed() then reply.w = true end
  self:send(reply)
end

-- strat.run: serves the process until the strategy returns. hooks: interrupted() (Ctrl-C).
function Session:serve(ctx, opts, hooks)
  self.ctx, self.by_ref, self.ref_of, self.ncalls = ctx, {}, {}, 0
  local t_serve = self.clock()
  local names
  names, self.allowed = callable(ctx)
  local task = self:encode(ctx.task, 0)
  self:send({op = "run", task = task, seeds = self:encode(ctx.seeds, 0), seed = hooks.seed or 1,
             rng = rngmod.state(ctx.rng), llm = ctx.llm, run = ctx.run,
             methods = json.array(names), opts = self:encode(opts, 0)})
  local int_at
  local function deadline()
    local now = self.clock()
    local limit, why
    local function tighter(t, w) if not limit or t < limit then limit, why = t, w end end
    local lim = ctx:limits()
    if lim.time_s and ctx:_live() then
      -- the grace runs from the deadline, or from the reply that came after it (the batch
      -- under way at the deadline finishes its candidate first): the strategy's next call is
      -- where the run's stop reaches it
      local at = now + (lim.time_s - ctx:elapsed())
      if self.replied_at and self.replied_at > at then at = self.replied_at end
      tighter(at + M.GRACE_S,
              string.format("was still running %.1f s after the --time deadline", M.GRACE_S))
    end
    if self.stopped then
      tighter(self.stopped.at + M.STOP_GRACE_S,
              string.format("went on %.0f s after the run was stopped (%s)", M.STOP_GRACE_S,
                            self.stopped.stop.reason))
    end
    if hooks.interrupted and hooks.interrupted() then
      int_at = int_at or now
      tighter(int_at + M.STOP_GRACE_S, "did not stop within 2 s of Ctrl-C")
    end
    return limit, why
  end
  local ok, e = pcall(function()
    while true do
      local msg = self:next_message(deadline)
      if msg.op == "call" then
        self.ncalls = self.ncalls + 1
        self:dispatch(msg)
      elseif self:side_message(msg) then -- luacheck: ignore 542
      elseif msg.op == "done" then
        return msg
      elseif msg.op == "fatal" then
        error({died = "failed: " .. tostring(msg.error)}, 0)
      else
        misbehave("sent an unknown message '%s'", msg.op)
      end
    end
  end)
  if not ok then
    if type(e) == "table" and (e.killed or e.misbehaved or e.died) then
      local text = self:death(e.killed and ("was killed: it " .. e.killed) or
                              e.misbehaved and ("was killed: it " .. e.misbehaved) or e.died,
                              e.died and 200 or 0)
      if e.killed and int_at then search.stop("interrupted", "Ctrl-C (the strategy was killed)") end
      error(text, 0)
    end
    self:finish(0)
    error(e, 0)
  end
  local waits, spins, hits = self.proc:spin_stats()
  self:finish(1000)
  if hooks.stats then
    self:log(string.format("boundary: %d ctx calls in %.3f s; kevo's waits %d, spun %d, got %d",
                           self.ncalls, self.clock() - t_serve, waits, spins, hits))
  end
  local done = e
  if done.ok == true then return end
  if type(done.stop) == "table" then
    -- a stop is the host's to give: the process may only hand back one it was given
    local s = self.last_stop
    if s and s.reason == done.stop.reason then error(s, 0) end
    error("the strategy raised a stop the run never gave (" .. tostring(done.stop.reason) .. ")", 0)
  end
  local lines =
    #self.tail > 0 and ("\n  its last lines:\n    " .. table.concat(self.tail, "\n    ")) or ""
  error(tostring(done.error) .. lines, 0)
end

-- boundary.load(specs, opts) -> strategy {name, describe, parts, run(ctx, opts_per_part)}.
-- opts: seed, cpu_s, mem_bytes, on_log(line), interrupted(), source(name) -> text, chunkname
-- | nil, msg (what strategy.load(NAME) in the process gets; default: the built-ins), stats
-- (log the number of ctx calls served when the strategy ends).
function M.load(specs, opts)
  local s = M.start(specs, opts)
  local names = {}
  for i, p in ipairs(s.parts) do names[i] = p.name end
  return {
    name = table.concat(names, "+"),
    describe = #s.parts == 1 and
      s.parts[1].describe or ("runs " .. table.concat(names, ", then ") .. " on one run"),
    parts = s.parts,
    session = s,
    confined = s.confined,
    landlock = s.landlock,
    run = function(ctx, per_part)
      return s:serve(ctx, per_part, {interrupted = opts.interrupted, seed = opts.seed,
                                     stats = opts.stats})
    end,
  }
end

return M
