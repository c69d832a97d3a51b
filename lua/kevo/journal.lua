-- kevo.journal: a run's journal read and written as a tape (docs/resume.md).
--
-- Every nondeterministic answer a search context gets (an evaluation batch's results, an LLM
-- proposal, a stop that came from the clock or Ctrl-C) is one journal entry of its run:
-- (kind, request, response). The request is canonical JSON (sorted keys): what the strategy
-- asked, so that asking the same thing gives the same text. The response is JSON and always
-- holds `t`, the run's time (seconds) when the answer came.
--
--   local tape = journal.open{db = db, run = id, mode = "live" | "resume" | "replay",
--                             status = "done"}   -- the run's status (replay: how it ended)
--   tape:live()                -> true when calls are to be made (and recorded) now
--   tape:take(kind, request [, items]) -> response | nil   (not live: the recorded answer)
--   tape:take_stop()           -> {reason=, message=, depth=} | nil (not live)
--   tape:record(kind, request, response) -> seq             (live: appends)
--   tape:finish()              -> nil | Divergence          (the strategy returned)
--
-- Modes:
--   live    a new run: nothing to read back.
--   resume  entries 1..n are read back in order; each must be what the strategy asks now,
--           else take() raises a Divergence (journal.is_divergence). Past entry n the tape goes
--           live: the hooks given to tape:on_live(fn) run once, then calls are made and
--           recorded from seq n+1.
--   replay  entries are read back and nothing is ever written. The first request that does
--           not match (or one asked past the end of a finished run's journal) is the
--           divergence point: it is noted (tape.diverged, the on_diverge hook) and from then
--           on answers come from an index of the whole journal (the same candidate evaluated
--           anywhere in the run, the same LLM request anywhere), or are nil (no recorded
--           answer; the caller says so).
--
-- Transparent entries: "resume" (a resume went live here; its response holds the budgets
-- from then on, handed to the on_budgets hook) and a run-wide stop that is not the journal's
-- last entry (the run was resumed past it) are consumed wherever they stand.
local json = require "kevo.json"

local M = {}

---------------------------------------------------------------------------------------------
-- Canonical JSON: object keys sorted, so equal requests have equal text in every process
-- (pairs() order differs between Lua states).

-- Canonical JSON (keys sorted): the same request always gives the same text.
function M.canonical(v)
  return json.encode(v, {canonical = true})
end

-- A short identity for a text (a source, a launch chunk): its length and FNV-1a 64 hash.
function M.digest(s)
  if s == nil then return nil end
  local h = 0xcbf29ce484222325
  for i = 1, #s do h = (h ~ s:byte(i)) * 0x100000001b3 end
  return string.format("%d:%016x", #s, h)
end

---------------------------------------------------------------------------------------------
-- Divergence: the strategy asked something other than what the journal recorded.

local Divergence = {}
Divergence.__index = Divergence

local function clip(s, n)
  s = tostring(s or "")
  if #s > n then return s:sub(1, n) .. "..." end
  return s
end

Divergence.__tostring = function(d)
  local lines = {string.format("E_DIVERGED: run %d diverges from its journal at seq %d",
                               d.run or 0, d.seq)}
  if d.expected_kind then
    lines[#lines + 1] = string.format("  journal:  %s %s", d.expected_kind, clip(d.expected, 600))
  else
    lines[#lines + 1] = "  journal:  (ends here)"
  end
  if d.asked_kind then
    lines[#lines + 1] = string.format("  strategy: %s %s", d.asked_kind, clip(d.asked, 600))
  else
    lines[#lines + 1] = "  strategy: (returned)"
  end
  if d.where then lines[#lines + 1] = "  first difference: " .. d.where end
  return table.concat(lines, "\n")
end

function M.is_divergence(e)
  return getmetatable(e) == Divergence
end

-- Where two request texts first differ: the first differing element of their decoded forms.
local function first_difference(a, b)
  local da, db = json.decode(a or "null"), json.decode(b or "null")
  local function walk(x, y, path)
    if type(x) ~= type(y) then return path end
    if type(x) ~= "table" then
      if x ~= y then return string.format("%s: %s vs %s", path, clip(json.encode(x), 80),
                                          clip(json.encode(y), 80)) end
      return nil
    end
    local keys, seen = {}, {}
    for k in pairs(x) do keys[#keys + 1] = k; seen[k] = true end
    for k in pairs(y) do if not seen[k] then keys[#keys + 1] = k end end
    table.sort(keys, function(p, q) return tostring(p) < tostring(q) end)
    for _, k in ipairs(keys) do
      local w = walk(x[k], y[k], path .. (math.type(k) and ("[" .. k .. "]") or ("." .. k)))
      if w then return w end
    end
    return nil
  end
  return walk(da, db, "request")
end

local function divergence(tape, entry, kind, request)
  return setmetatable({run = tape.run, seq = entry and entry.seq or tape.n + 1,
                       expected_kind = entry and entry.kind, expected = entry and entry.request,
                       asked_kind = kind, asked = request,
                       where = entry and kind == entry.kind and request and
                               first_difference(request, entry.request) or nil}, Divergence)
end

---------------------------------------------------------------------------------------------
-- The tape

local Tape = {}
Tape.__index = Tape

-- Stops that end the whole run (kevo.search's GLOBAL_STOP): only the last entry may be one,
-- unless a resume went on past it.
local GLOBAL = {evals = true, time = true, interrupted = true, no_gpu = true}

local MODES = {live = true, resume = true, replay = true}

function M.open(opts)
  assert(type(opts) == "table" and opts.db and math.type(opts.run), "journal.open: db and run")
  assert(MODES[opts.mode], "journal.open: mode must be live, resume or replay")
  local n = 0
  if opts.mode ~= "live" then n = assert(opts.db:journal_count(opts.run)) end
  return setmetatable({db = opts.db, run = opts.run, mode = opts.mode, n = n, pos = 0, t = 0,
                       status = opts.status, llm_id = 0, hooks = {}, steps = 0, offline = 0,
                       on_step = opts.on_step, on_budgets = nil, on_diverge = nil}, Tape)
end

-- Entry seq decoded, or nil past the end.
function Tape:_read(seq)
  if self._ahead and self._ahead.seq == seq then return self._ahead end
  if seq > self.n then return nil end
  local kind, request, response = self.db:journal_get(self.run, seq)
  if kind == nil then
    error(string.format("journal of run %d: entry %d of %d is missing (%s)", self.run, seq,
                        self.n, tostring(request)), 0)
  end
  local resp = response and json.decode(response)
  if type(resp) ~= "table" then
    error(string.format("journal of run %d: entry %d has no readable response", self.run, seq), 0)
  end
  self._ahead = {seq = seq, kind = kind, request = request, response = resp}
  return self._ahead
end

function Tape:_consume(e)
  self.pos = e.seq
  self.steps = self.steps + 1
  if type(e.response.t) == "number" then self.t = e.response.t end
  if e.kind == "propose" and math.type(e.response.llm_id) then
    self.llm_id = math.max(self.llm_id, e.response.llm_id)
  end
  if self.on_step then self.on_step(e) end
end

-- The next entry that is not transparent (consuming the transparent ones), or nil at the end.
function Tape:_head()
  while true do
    local e = self:_read(self.pos + 1)
    if not e then return nil end
    if e.kind == "resume" then
      self:_consume(e)
      if self.on_budgets then self.on_budgets(e.response) end
    elseif e.kind == "stop" and GLOBAL[e.response.reason] and e.seq < self.n then
      self:_consume(e) -- the run was resumed past this stop
    else
      return e
    end
  end
end

function Tape:on_live(fn)
  self.hooks[#self.hooks + 1] = fn
end

function Tape:_go_live()
  self.mode = "live"
  self._ahead = nil
  for _, fn in ipairs(self.hooks) do fn(self) end
end

-- True when calls are to be made now. A resume tape at its end goes live here.
function Tape:live()
  if self.mode == "live" then return true end
  if self.broken then error(self.broken, 0) end
  if self.mode == "replay" then return false end
  if self:_head() then return false end
  self:_go_live()
  return true
end

-- The recorded answer to (kind, request). Resume: raises a Divergence on a mismatch. Replay:
-- a mismatch is the divergence point; answers then come from the journal's index: for
-- "evaluate", items (a list of per-candidate keys) get {ids = {...}, results = {...}} with
-- holes where no candidate matched; for "propose", an entry with the same request.
function Tape:take(kind, request, items)
  if self.broken then error(self.broken, 0) end
  if self.mode == "replay" and self.diverged then return self:_lookup(kind, request, items) end
  local e = self:_head()
  if e and e.kind == kind and e.request == request then
    self:_consume(e)
    return e.response
  end
  if self.mode == "resume" then
    self.broken = divergence(self, e, kind, request) -- a strategy that swallows it meets it again
    error(self.broken, 0)
  end
  if not e and self.status ~= "done" and self.status ~= "failed" then
    return nil -- a replay of an unfinished run: take_stop() ends it before this
  end
  self.diverged = divergence(self, e, kind, request)
  if self.on_diverge then self.on_diverge(self.diverged) end
  return self:_lookup(kind, request, items)
end

-- A recorded stop due now, if any: the next entry when it is a stop (a resume goes on past
-- the journal's last run-wide stop instead), or, replaying an unfinished run at the end of
-- its journal, a journal_end stop.
function Tape:take_stop()
  if self.mode == "live" or self.diverged then return nil end
  local e = self:_head()
  if not e then
    if self.mode == "replay" and self.status ~= "done" and self.status ~= "failed" then
      return {reason = "journal_end", message = "the journal ends here (the run was " ..
              (self.status == "killed" and "killed" or "cut short") .. ")"}
    end
    return nil
  end
  if e.kind ~= "stop" then return nil end
  self:_consume(e)
  if self.mode == "resume" and e.seq == self.n and GLOBAL[e.response.reason] then
    return nil -- the run stopped here; the resume goes on
  end
  return {reason = e.response.reason, message = e.response.message, depth = e.response.depth}
end

-- Appends an entry (live only); response is a table, encoded here.
function Tape:record(kind, request, response)
  assert(self.mode == "live", "journal: record on a tape that is not live")
  local seq, msg = self.db:journal_append(self.run, kind, request,
                                             M.canonical(response))
  if not seq then error("journal of run " .. self.run .. ": " .. tostring(msg), 0) end
  if seq ~= self.n + 1 then
    error(string.format("journal of run %d: entry %d written where %d was expected: another " ..
                        "kevo is writing this run", self.run, seq, self.n + 1), 0)
  end
  self.n, self.pos = seq, seq
  return seq
end

-- Called when the strategy returned: entries left unread mean it diverged (it stopped asking).
function Tape:finish()
  if self.broken then return self.broken end
  if self.mode == "live" or self.diverged then return nil end
  local e = self:_head()
  if not e then return nil end
  local d = divergence(self, e, nil, nil)
  if self.mode == "replay" then
    self.diverged = d
    if self.on_diverge then self.on_diverge(d) end
  end
  return d
end

---------------------------------------------------------------------------------------------
-- The offline index (replay after a divergence)

local function index(self)
  if self._index then return self._index end
  local ix = {evals = {}, proposals = {}}
  for seq = 1, self.n do
    local kind, request, response = self.db:journal_get(self.run, seq)
    local resp = response and json.decode(response)
    if kind == "evaluate" and type(resp) == "table" then
      local req = json.decode(request)
      for i, item in ipairs(type(req) == "table" and req.cands or {}) do
        local key = M.item_key(item)
        local r = resp.results and resp.results[i]
        -- a candidate --time left unstarted was not evaluated: no answer for it here
        if r and r.verdict ~= "not_evaluated" and not ix.evals[key] then
          ix.evals[key] = {id = resp.ids and resp.ids[i], result = resp.results[i]}
        end
      end
    elseif kind == "propose" and type(resp) == "table" then
      local q = ix.proposals[request] or {}
      q[#q + 1] = resp
      ix.proposals[request] = q
    end
  end
  self._index = ix
  return ix
end

-- The identity of a candidate in an evaluate request, without its lineage.
function M.item_key(item)
  return table.concat({tostring(item.lang), tostring(item.src), tostring(item.launch),
                       tostring(item.knobs)}, "|")
end

function Tape:_lookup(kind, request, items)
  self.offline = self.offline + 1
  local ix = index(self)
  if kind == "evaluate" then
    local out = {ids = {}, results = {}, t = self.t, offline = true}
    for i, key in ipairs(items or {}) do
      local hit = ix.evals[key]
      if hit then out.ids[i], out.results[i] = hit.id, hit.result end
    end
    return out
  elseif kind == "propose" then
    local q = ix.proposals[request]
    if q and #q > 0 then return table.remove(q, 1) end
  end
  return nil
end

return M
