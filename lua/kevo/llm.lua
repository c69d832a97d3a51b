-- kevo.llm: language-model calls over the OpenAI chat-completions and Anthropic Messages APIs.
-- Policy lives here (request building, retries, budgets, journal, cache); kevo.http does the
-- I/O: every batch of requests runs concurrently in C (curl multi) with connection reuse.
--
--   local llm = require "kevo.llm"
--   local replies = llm.generate{messages = msgs, n = 4, temperature = 0.7, max_tokens = 2048}
--   -- replies[i] = {text=, finish="stop"|"length"|"tool"|"error", truncated=, usage=, ...}
--   -- or nil, "E_HTTP: ...", "E_HTTP" (also E_TIMEOUT, E_PARSE, E_BUDGET, E_DB)
--   llm.configure{config=, archive=, run=, ...}  -- the default session (see M.session)
--   llm.usage(), llm.usage_line(), llm.doctor{...}
-- The full contract is in docs/llm.md.
local http = require "kevo.http"
local json = require "kevo.json"
local sys = require "kevo.sys"
local config = require "kevo.config"

local M = {}

local wire = {openai = require "kevo.llm.openai", anthropic = require "kevo.llm.anthropic"}

-- Prices in US dollars per million tokens (input, output), for the cost budget. List prices as
-- published by the providers in 2025; check them, and override or add with
-- `llm.price.<model> = input output` in kevo.conf.
M.prices = {
  ["gpt-4o"] = {input = 2.5, output = 10}, ["gpt-4o-mini"] = {input = 0.15, output = 0.6},
  ["gpt-4.1"] = {input = 2, output = 8}, ["gpt-4.1-mini"] = {input = 0.4, output = 1.6},
  ["o3"] = {input = 2, output = 8}, ["o4-mini"] = {input = 1.1, output = 4.4},
  ["claude-sonnet-4-20250514"] = {input = 3, output = 15},
  ["claude-opus-4-20250514"] = {input = 15, output = 75},
  ["claude-3-5-haiku-20241022"] = {input = 0.8, output = 4},
}

---------------------------------------------------------------------------------------------
-- Canonical JSON: sorted keys, so identical requests have identical text (cache, journal).

-- Canonical JSON (keys sorted): identical requests give identical text (the cache key).
function M.canonical_json(v) return json.encode(v, {canonical = true}) end

---------------------------------------------------------------------------------------------
-- Sessions: a client (connections kept across calls), a config, a budget, usage, a journal.

local Session = {}
Session.__index = Session
Session.__name = "kevo.llm.Session"

local SESSION_OPTS = {config = true, flags = true, dir = true, archive = true, run = true,
                      budget_tokens = true, budget_cost = true, cache = true, log = true,
                      resume = true}

-- opts: config (a table from kevo.config.llm; default: resolved from dir/flags and the
-- environment), archive (a kevo.archive handle: every attempt is journaled), run (run id for
-- the journal), budget_tokens, budget_cost, cache (answer identical requests from the
-- archive), log (a line on stderr per call), resume ({after=, upto=}: llm_calls ids; a resumed
-- run's attempts stored after its last journaled proposal and before it went live are settled
-- again instead of being sent, see Session:replay_stored). Raises on a bad config.
function M.session(opts)
  opts = opts or {}
  for k in pairs(opts) do
    if not SESSION_OPTS[k] then error("llm.session: unknown option '" .. tostring(k) .. "'", 2) end
  end
  local cfg = opts.config
  if not cfg then
    local msg
    cfg, msg = config.llm{dir = opts.dir, flags = opts.flags}
    if not cfg then error("llm.session: " .. msg, 2) end
  end
  local s = setmetatable({cfg = cfg, archive = opts.archive, run = opts.run, calls = {}}, Session)
  s.budget_tokens = opts.budget_tokens or cfg.budget_tokens
  s.budget_cost = opts.budget_cost or cfg.budget_cost or nil
  s.cache = opts.cache == nil and cfg.cache or opts.cache
  if opts.log ~= nil then s.log = opts.log else s.log = cfg.log end
  s.used = {calls = 0, attempts = 0, retries = 0, cached = 0, input_tokens = 0,
            output_tokens = 0, cost = 0}
  if opts.resume then
    if not (opts.archive and opts.run) then
      error("llm.session: resume needs archive and run", 2)
    end
    local after, upto = opts.resume.after or 0, opts.resume.upto or 0
    if upto > after then s.replay = {after = after, upto = upto, cursor = {}} end
  end
  s.client = assert(http.client{concurrency = math.max(1, math.floor(cfg.concurrency))})
  return s
end

function Session:price(model)
  return self.cfg.prices[model] or M.prices[model]
end

local function cost_of(price, input, output)
  return (input * price.input + output * price.output) / 1e6
end

local function fail(msg, code) return {ok = false, error = code .. ": " .. msg, code = code} end

local MONTHS = {Jan = 1, Feb = 2, Mar = 3, Apr = 4, May = 5, Jun = 6, Jul = 7, Aug = 8, Sep = 9,
                Oct = 10, Nov = 11, Dec = 12}

-- Seconds since 1970 of an HTTP date in its one current form (IMF-fixdate, RFC 9110:
-- "Sun, 06 Nov 1994 08:49:37 GMT"), or nil.
local function http_date(v)
  local d, mon, y, hh, mm, ss = (v or ""):match(
    "^%a%a%a, (%d%d) (%a%a%a) (%d%d%d%d) (%d%d):(%d%d):(%d%d) GMT$")
  local m = MONTHS[mon or ""]
  if not m then return nil end
  y, d = tonumber(y), tonumber(d)
  -- days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
  y = m <= 2 and y - 1 or y
  local era = y // 400
  local yoe = y - era * 400
  local doy = (153 * (m + (m > 2 and -3 or 9)) + 2) // 5 + d - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  local days = era * 146097 + doe - 719468
  return days * 86400 + tonumber(hh) * 3600 + tonumber(mm) * 60 + tonumber(ss)
end
M.http_date = http_date

-- A number of seconds from retry-after-ms or Retry-After (seconds, or an HTTP date read
-- against the response's own Date header, so the local clock does not matter), or nil.
local function retry_after(headers)
  local ms = tonumber(headers["retry-after-ms"] or "")
  if ms and ms >= 0 then return ms / 1000 end
  local s = tonumber(headers["retry-after"] or "")
  if s and s >= 0 then return s end
  local at, now = http_date(headers["retry-after"]), http_date(headers["date"])
  if at and now then return math.max(0, at - now) end
  return nil -- a date without the server's Date, or unreadable: the backoff applies
end

local SPEND_WORDS = {"insufficient_quota", "billing", "credit balance", "spend limit",
                     "exceeded your current quota", "quota exceeded"}

local function is_spend_limit(info, body)
  for _, f in ipairs{info.code or "", info.type or "", info.message or ""} do
    local low = f:lower()
    for _, w in ipairs(SPEND_WORDS) do
      if low:find(w, 1, true) then return true end
    end
  end
  return false
end

local function retryable_status(status)
  return status == 408 or status == 409 or status == 429 or (status >= 500 and status <= 599)
end

local function snippet(s)
  s = s:gsub("%s+", " ")
  if #s > 200 then s = s:sub(1, 200) .. "..." end
  return s
end

-- The expected-failure outcome of one attempt that got no usable reply, and whether it may be
-- retried. r is the raw HTTP result; doc the decoded body (or nil).
local function classify(call, r, doc)
  if r.code then
    if r.code == "E_NOMEM" then return fail(r.error:gsub("^E_NOMEM: ", ""), "E_HTTP"), false end
    return fail(r.error:gsub("^E_%u+: ", "") .. " (" .. call.url .. ")", r.code), true
  end
  local info = call.wire.error_info(doc)
  local why = info.message ~= nil and info.message ~= "" and info.message or snippet(r.body)
  local msg = string.format("HTTP %d from %s: %s", r.status, call.url, why)
  if r.status == 402 or (r.status == 429 and is_spend_limit(info, r.body)) then
    return fail(msg .. " (spend limit: not retried)", "E_BUDGET"), false
  end
  if r.status == 401 or r.status == 403 then
    msg = msg .. (call.key_env and (" (is $" .. call.key_env .. " set and valid?)") or "")
  end
  return fail(msg, "E_HTTP"), retryable_status(r.status)
end

-- Stores one attempt (request and raw response) in the archive before the reply is parsed.
function Session:journal(call, r, input, output, err)
  self.used.attempts = self.used.attempts + 1
  if not self.archive then return true end
  local price = self:price(call.model)
  return self.archive:llm_call_add{
    run = self.run, request = call.envelope, response = r.body, http_status = r.status,
    model = call.model, provider = self.cfg.provider, input_tokens = input,
    output_tokens = output, ms = r.ms, error = err,
    cost = price and (input or output) and cost_of(price, input or 0, output or 0) or nil}
end

function Session:account(call, input, output)
  self.used.input_tokens = self.used.input_tokens + input
  self.used.output_tokens = self.used.output_tokens + output
  local price = self:price(call.model)
  if price then self.used.cost = self.used.cost + cost_of(price, input, output) end
end

-- Settles one attempt: journal, classify, account. Returns "retry" or nil (call.result set).
-- stored: the attempt is one the archive holds already (a resume settling it again).
function Session:settle(call, r, stored)
  local doc = r.body ~= "" and json.decode(r.body) or nil -- nil for a malformed body
  local input, output
  if doc then input, output = call.wire.usage(doc) end
  local ok2xx = not r.code and r.status >= 200 and r.status < 300
  local failure, retry
  if not ok2xx then failure, retry = classify(call, r, doc) end
  if ok2xx and not doc then
    failure = fail(string.format("malformed JSON in a %d reply from %s (stored raw): %s",
      r.status, call.url, snippet(r.body)), "E_PARSE")
  end
  if stored then
    self.used.attempts = self.used.attempts + 1
  else
    local ok, msg = self:journal(call, r, input, output, failure and failure.error)
    if not ok then
      call.result = fail(tostring(msg):gsub("^E_%u+: ", ""), "E_DB")
      return nil
    end
  end
  if input or output then self:account(call, input or 0, output or 0) end
  if not failure then
    local parsed, why = call.wire.parse(doc)
    if not parsed then
      failure = fail(why .. " in the reply from " .. call.url .. " (stored raw)", "E_PARSE")
    else
      if not (input or output) then -- the server sent no usage: count a conservative guess
        local chars = 0
        for _, rep in ipairs(parsed.replies) do chars = chars + #rep.text end
        self:account(call, call.est_input, chars // 3 + 1)
        parsed.input_tokens, parsed.output_tokens = call.est_input, chars // 3 + 1
        parsed.estimated = true
      end
      call.result = {ok = true, parsed = parsed, ms = r.ms, attempts = call.attempts}
      return nil
    end
  end
  local cfg = self.cfg
  if retry and call.attempts < cfg.max_attempts then
    local wait = retry_after(r.headers)
    if wait and wait > cfg.retry_after_cap then
      call.result = fail(failure.error:gsub("^E_%u+: ", "") .. string.format(
        " (server asked to wait %.0f s, more than llm.retry_after_cap)", wait), failure.code)
      return nil
    end
    if not wait then
      local d = math.min(cfg.backoff_cap, cfg.backoff_base * 2 ^ (call.attempts - 1))
      wait = d / 2 + math.random() * d / 2 -- capped exponential backoff, equal jitter
    end
    call.delay = wait
    self.used.retries = self.used.retries + 1
    if self.log then
      sys.log(string.format("llm: %s:%s %s; retry %d of %d in %.2f s", cfg.provider,
        call.model, failure.error, call.attempts, cfg.max_attempts - 1, wait))
    end
    return "retry"
  end
  if retry then failure.error = failure.error .. string.format(" (gave up after %d attempts)",
    call.attempts) end
  call.result = failure
end

-- Admits the calls that fit the budgets (checked before every attempt; each call reserves
-- its estimated input plus its whole output allowance); the rest fail with E_BUDGET.
function Session:admit(calls)
  local admitted, tokens, cost = {}, 0, 0
  local used = self.used
  for _, c in ipairs(calls) do
    local need = c.est_input + c.max_out
    local spent = used.input_tokens + used.output_tokens
    if spent + tokens + need > self.budget_tokens then
      c.result = fail(string.format(
        "token budget: %d of %d tokens used, this call may need %d tokens", spent,
        self.budget_tokens, need), "E_BUDGET")
    elseif self.budget_cost then
      local price = self:price(c.model)
      local ccost = price and cost_of(price, c.est_input, c.max_out)
      if not price then
        c.result = fail("a cost budget is set but model '" .. c.model .. "' has no price "
          .. "(add llm.price." .. c.model .. " = INPUT OUTPUT in kevo.conf)", "E_BUDGET")
      elseif used.cost + cost + ccost > self.budget_cost then
        c.result = fail(string.format("cost budget: $%.4f of $%.4f spent, this call may cost "
          .. "$%.4f", used.cost, self.budget_cost, ccost), "E_BUDGET")
      else
        cost = cost + ccost
      end
    end
    if not c.result then
      tokens = tokens + need
      admitted[#admitted + 1] = c
    end
  end
  return admitted
end

-- A resumed run's attempts that the archive holds but no journaled proposal used (the kill
-- came between the reply and the journal entry) are settled again, in the order they were
-- stored, each once, as if they had just arrived: a reply answers without being paid again,
-- a failure that was not retried (400, malformed JSON) fails the same way, a failure that
-- was retried counts as the attempt it was. Only when the stored attempts run out is the
-- call sent. Attempts the resumed session stores itself (ids past `upto`) never answer it:
-- it sends what an uninterrupted run sends.
function Session:replay_stored(c)
  local w = self.replay
  while w and not c.result do
    local raw, row = self.archive:llm_call_lookup(c.envelope, {run = self.run,
      after = w.cursor[c.envelope] or w.after, upto = w.upto})
    if type(row) ~= "table" then return end
    w.cursor[c.envelope] = row.id
    c.attempts = c.attempts + 1
    local status = math.type(row.http_status) and row.http_status or 0
    local code = status == 0 and type(row.error) == "string" and row.error:match("^(E_%u+):")
    self:settle(c, {status = status, body = raw or "", headers = {}, ms = row.ms or 0,
                    code = code or nil, error = code and row.error or nil}, true)
    if c.result then c.result.replayed = true end
  end
end

function Session:from_cache(c)
  if not (self.archive and self.archive.llm_call_lookup) then return end
  local raw, row = self.archive:llm_call_lookup(c.envelope)
  if type(raw) ~= "string" then return end
  if type(row) == "table" and math.type(row.http_status)
      and (row.http_status < 200 or row.http_status > 299) then return end
  local doc = json.decode(raw)
  local parsed = doc and c.wire.parse(doc)
  if not parsed then return end -- a stored failure is no answer: ask the server
  c.result = {ok = true, parsed = parsed, ms = 0, attempts = 0, cached = true}
  self.used.cached = self.used.cached + 1
end

-- The line llm.log promises for each call that was not answered from the archive: its usage
-- and time, or its failure (one that was never retried, 400 or malformed JSON, included; a
-- call the budget stopped before it was sent says so).
function Session:log_call(c)
  local r = c.result
  local who = self.cfg.provider .. ":" .. c.model
  if r.ok and r.cached then return end
  if r.ok then
    local p = r.parsed
    sys.log(string.format("llm: %s in=%d out=%d %.0f ms%s%s", who, p.input_tokens or 0,
      p.output_tokens or 0, r.ms, c.attempts > 1 and (" after " .. c.attempts .. " attempts") or "",
      r.replayed and " (stored before the resume: not sent again)" or ""))
  elseif c.attempts == 0 then
    sys.log(string.format("llm: %s not sent: %s", who, r.error))
  else
    sys.log(string.format("llm: %s failed: %s%s", who, r.error,
      r.replayed and " (stored before the resume: not sent again)" or ""))
  end
end

-- Runs calls to completion: cache, then rounds of (budget check, one concurrent batch whose
-- attempts are settled as each ends); calls to retry go into the next round with their own
-- delays. deadline (kevo.clock's seconds, or nil): no attempt goes on past it (each is given
-- what is left as its timeouts) and none starts after it: the calls left fail with E_TIMEOUT
-- (a run's --time is hard against an answer still to come).
function Session:run_calls(calls, use_cache, deadline)
  local pending = {}
  for _, c in ipairs(calls) do
    self:replay_stored(c)
    if not c.result and use_cache then self:from_cache(c) end
    if not c.result then pending[#pending + 1] = c end
  end
  local cfg = self.cfg
  while #pending > 0 do
    local left = deadline and deadline - sys.clock()
    if left and left <= 0 then
      for _, c in ipairs(pending) do
        c.result = fail("the run's time ran out (--time) before the model answered", "E_TIMEOUT")
      end
      break
    end
    local batch = self:admit(pending)
    if #batch == 0 then break end
    local function cap(t) return left and math.min(t or left, math.max(left, 0.05)) or t end
    local reqs = {}
    for i, c in ipairs(batch) do
      reqs[i] = {url = c.url, headers = c.headers, auth = c.auth, body = c.body,
                 connect_timeout = cap(cfg.connect_timeout), timeout = cap(cfg.timeout),
                 stall_timeout = cap(cfg.stall_timeout), delay = c.delay and cap(c.delay),
                 max_body = cfg.max_body}
    end
    -- each attempt is settled (stored in the archive first) the moment its response ends,
    -- while the rest of the batch is still in flight: a kill then loses no reply that came
    local outcome = {}
    local _, msg, code = self.client:request_many(reqs, function(i, r)
      local c = batch[i]
      c.attempts = c.attempts + 1
      outcome[i] = self:settle(c, r) or "settled"
    end)
    local nextround = {}
    for i, c in ipairs(batch) do
      if not outcome[i] then -- the batch itself failed before this request ended
        c.attempts = c.attempts + 1
        c.result = fail(msg, code)
      elseif outcome[i] == "retry" then
        nextround[#nextround + 1] = c
      end
    end
    pending = nextround
  end
  for _, c in ipairs(calls) do
    self.used.calls = self.used.calls + 1
    if self.log then self:log_call(c) end
  end
end

local GEN_OPTS = {messages = true, model = true, n = true, temperature = true, max_tokens = true,
                  stop = true, top_p = true, seed = true, cache = true, deadline = true}

local function check_request(req, fname)
  if type(req) ~= "table" then error(fname .. ": expected a request table", 3) end
  for k in pairs(req) do
    if not GEN_OPTS[k] then error(fname .. ": unknown option '" .. tostring(k) .. "'", 3) end
  end
  if type(req.messages) ~= "table" or #req.messages == 0 then
    error(fname .. ": messages must be a non-empty list", 3)
  end
  for i, m in ipairs(req.messages) do
    if type(m) ~= "table" or type(m.role) ~= "string"
        or (type(m.content) ~= "string" and type(m.content) ~= "table") then
      error(string.format("%s: messages[%d] needs role and content", fname, i), 3)
    end
  end
  local n = req.n or 1
  if math.type(n) ~= "integer" or n < 1 or n > 128 then
    error(fname .. ": n must be an integer 1..128", 3)
  end
  if req.max_tokens and (math.type(req.max_tokens) ~= "integer" or req.max_tokens < 1) then
    error(fname .. ": max_tokens must be a positive integer", 3)
  end
  if req.deadline ~= nil and type(req.deadline) ~= "number" then
    error(fname .. ": deadline must be a number (kevo.clock's seconds)", 3)
  end
end

-- The calls one request needs: one call with n where the server takes n, else n calls.
function Session:plan(req, fname)
  check_request(req, fname)
  local cfg = self.cfg
  local model = req.model or cfg.model
  if not model then
    error(fname .. ": no model configured (llm = provider:model in kevo.conf, $KEVO_LLM, "
      .. "or --llm)", 3)
  end
  local n = req.n or 1
  local w = wire[cfg.api]
  local native = cfg.api == "openai" and cfg.native_n and n > 1
  local max_out = math.floor(req.max_tokens or cfg.max_tokens)
  local calls = {}
  for sample = 1, native and 1 or n do
    local built = w.build(cfg, {messages = req.messages, model = model,
      n = native and n or nil, temperature = req.temperature or cfg.temperature or nil,
      max_tokens = max_out, stop = req.stop, top_p = req.top_p, seed = req.seed})
    local body = M.canonical_json(built.body)
    local envelope = M.canonical_json{provider = cfg.provider, url = built.url,
      body = built.body, sample = (not native and n > 1) and sample or nil}
    calls[#calls + 1] = {wire = w, model = model, url = built.url, headers = built.headers,
      auth = built.auth, key_env = cfg.key_env or nil, body = body, envelope = envelope,
      est_input = #body // 3 + 16, max_out = max_out * (native and n or 1), attempts = 0,
      sample = sample}
  end
  return calls
end

local function shape(calls, provider)
  local replies = {ok = true, usage = {input_tokens = 0, output_tokens = 0}}
  local first
  for _, c in ipairs(calls) do
    local r = c.result
    if r.ok then
      local p = r.parsed
      replies.usage.input_tokens =
        replies.usage.input_tokens + (r.cached and 0 or p.input_tokens or 0)
      replies.usage.output_tokens =
        replies.usage.output_tokens + (r.cached and 0 or p.output_tokens or 0)
      for _, rep in ipairs(p.replies) do
        replies[#replies + 1] = {text = rep.text, finish = rep.finish, raw_finish = rep.raw_finish,
          truncated = rep.finish == "length", model = p.model or c.model, provider = provider,
          usage = {input_tokens = p.input_tokens, output_tokens = p.output_tokens,
                   shared = #p.replies > 1 or nil, estimated = p.estimated},
          ms = r.ms, attempts = r.attempts, cached = r.cached or false}
      end
    else
      first = first or r
      replies.errors = replies.errors or {}
      replies.errors[#replies.errors + 1] = {error = r.error, code = r.code}
    end
  end
  if #replies == 0 then return nil, first.error, first.code end
  return replies
end

-- generate{messages=, model=, n=, temperature=, max_tokens=, stop=, top_p=, seed=, cache=,
--          deadline=}
-- -> replies (a list; replies.usage the total, replies.errors when some samples failed)
-- | nil, msg, code when no sample succeeded.
function Session:generate(req)
  local calls = self:plan(req, "llm.generate")
  local use_cache = req.cache
  if use_cache == nil then use_cache = self.cache end
  self:run_calls(calls, use_cache, req.deadline)
  return shape(calls, self.cfg.provider)
end

-- batch{req, req, ...} -> {replies | {ok=false, error=, code=}, ...}: every request's calls
-- run in one concurrent batch.
function Session:batch(reqs)
  local all, spans = {}, {}
  for i, req in ipairs(reqs) do
    local calls = self:plan(req, "llm.batch")
    spans[i] = calls
    for _, c in ipairs(calls) do all[#all + 1] = c end
  end
  self:run_calls(all, self.cache)
  local out = {}
  for i, calls in ipairs(spans) do
    local replies, msg, code = shape(calls, self.cfg.provider)
    out[i] = replies or {ok = false, error = msg, code = code}
  end
  return out
end

function Session:usage()
  local u = {}
  for k, v in pairs(self.used) do u[k] = v end
  u.total_tokens = u.input_tokens + u.output_tokens
  u.budget_tokens, u.budget_cost = self.budget_tokens, self.budget_cost
  return u
end

local function thousands(n)
  local s = tostring(math.floor(n))
  local out = s:reverse():gsub("(%d%d%d)", "%1,"):reverse()
  return (out:gsub("^,", ""))
end

function Session:usage_line()
  local u = self:usage()
  local line = string.format("llm: %d calls (%d attempts, %d retries, %d cached), %s of %s "
    .. "tokens (in %s, out %s)", u.calls, u.attempts, u.retries, u.cached,
    thousands(u.total_tokens), thousands(u.budget_tokens), thousands(u.input_tokens),
    thousands(u.output_tokens))
  if u.cost > 0 or u.budget_cost then
    line = line .. string.format(", $%.4f", u.cost)
    if u.budget_cost then line = line .. string.format(" of $%.2f", u.budget_cost) end
  end
  return line
end

function Session:close()
  if self.client then self.client:close() end
end

---------------------------------------------------------------------------------------------
-- The default session, for scripts and strategies that just call llm.generate.

function M.configure(opts)
  if M.default then M.default:close() end
  M.default = M.session(opts)
  return M.default
end

local function default() return M.default or M.configure() end

function M.generate(req) return default():generate(req) end
function M.batch(reqs) return default():batch(reqs) end
function M.usage() return default():usage() end
function M.usage_line() return default():usage_line() end

-- The fix that fits a failed probe: the key only when the server refused it (401, 403), the
-- URL or the server when nothing came back in time or the connection failed.
local function doctor_fix(err, ecode, cfg, d)
  local status = tonumber(err:match("HTTP (%d%d%d) from"))
  local where = " (llm.base_url / KEVO_LLM_BASE_URL)"
  if ecode == "E_TIMEOUT" then
    return "no answer from " .. cfg.base_url .. " in time: check the URL" .. where ..
      " and that the server there is up, not overloaded, and serves model " .. tostring(cfg.model)
  elseif ecode == "E_HTTP" and not status then
    return "start the server at " .. cfg.base_url .. " or fix the URL" .. where
  elseif status == 401 or status == 403 then
    if d.key_env and not d.key_present then
      return "export " .. d.key_env .. "=<your key> (or name another variable with llm.key_env)"
    end
    return "check the key in $" .. tostring(d.key_env) .. " and the model's access"
  elseif ecode == "E_BUDGET" then
    return "check the account's spend limit or billing with the provider"
  end
  return "check the model name and the server's answer above"
end

-- doctor{probe=true, config=, dir=, flags=} -> {configured, ok, detail, fix, provider, api,
-- model, base_url, key_env, key_present, ms, error, code, reply}: what is configured and, when
-- probe is not false, whether a tiny request answers. The key's value is never read here:
-- key_present comes from C.
function M.doctor(opts)
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "probe" and k ~= "config" and k ~= "dir" and k ~= "flags" then
      error("llm.doctor: unknown option '" .. tostring(k) .. "'", 2)
    end
  end
  local cfg, msg, code = opts.config, nil, nil
  if not cfg then cfg, msg, code = config.llm{dir = opts.dir, flags = opts.flags} end
  if not cfg then
    return {configured = false, ok = false, error = msg, code = code, detail = msg,
            fix = "fix the llm settings in kevo.conf or the KEVO_LLM* variables"}
  end
  local d = {provider = cfg.provider, api = cfg.api, model = cfg.model or nil,
             base_url = cfg.base_url, key_env = cfg.key_env or nil,
             key_present = cfg.key_env and http.env_present(cfg.key_env) or false,
             configured = cfg.model and true or false}
  local key = d.key_env and string.format(", key in $%s (%s)", d.key_env,
    d.key_present and "set" or "not set") or ", no key"
  if not cfg.model then
    d.ok, d.code = false, "E_PARSE"
    d.error = "E_PARSE: no model configured"
    d.detail = "no model configured (provider " .. cfg.provider .. key .. ")"
    d.fix = "set llm = provider:model in kevo.conf, or KEVO_LLM=provider:model"
    return d
  end
  d.detail = string.format("%s:%s at %s%s", cfg.provider, cfg.model, cfg.base_url, key)
  if opts.probe == false then
    d.ok = true
    d.detail = d.detail .. " (not probed)"
    return d
  end
  local probe = {}
  for k, v in pairs(cfg) do probe[k] = v end
  -- one attempt, and an answer within 30 s (no byte for 20 s: stalled), or sooner if the
  -- settings ask for it
  probe.max_attempts, probe.log = 1, false
  probe.timeout = math.min(cfg.timeout or 30, 30)
  probe.stall_timeout = math.min(cfg.stall_timeout or 20, 20)
  probe.budget_cost = false
  local s = M.session{config = probe, budget_tokens = 100000, cache = false}
  local t0 = sys.clock()
  local replies, err, ecode = s:generate{messages = {{role = "user",
    content = "Reply with the single word OK."}}, max_tokens = 16}
  d.ms = math.floor((sys.clock() - t0) * 1000 + 0.5)
  s:close()
  d.ok = replies ~= nil
  if replies then
    d.reply = replies[1].text
    d.detail = d.detail .. string.format(", answered in %d ms", d.ms)
  else
    d.error, d.code = err, ecode
    d.detail = d.detail .. ": " .. err
    d.fix = doctor_fix(err, ecode, cfg, d)
  end
  return d
end

return M
