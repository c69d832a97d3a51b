-- The LLM client against a real loopback server with scripted faults (tests/integration/
-- llm_server.py), for both APIs. Run by test_llm.py, which starts the server and sets
-- KEVO_TEST_LLM_URL, KEVO_TEST_SECRET (the key) and KEVO_TEST_DB (an archive path).
local llm = require "kevo.llm"
local config = require "kevo.config"
local extract = require "kevo.extract"
local http = require "kevo.http"
local json = require "kevo.json"

local URL = assert(os.getenv("KEVO_TEST_LLM_URL"), "KEVO_TEST_LLM_URL is not set")
local KEY = assert(os.getenv("KEVO_TEST_SECRET"), "KEVO_TEST_SECRET is not set")
local failures, checks = 0, 0

local function check(cond, what, ...)
  checks = checks + 1
  if not cond then
    failures = failures + 1
    local extra = {}
    for i = 1, select("#", ...) do extra[#extra + 1] = tostring((select(i, ...))) end
    print("FAIL " .. what .. (#extra > 0 and (": " .. table.concat(extra, " | ")) or ""))
  end
  return cond
end

---------------------------------------------------------------------------------------------
-- The journal: the real archive (a SQLite file), wrapped to record what llm hands it.

local archive = require "kevo.archive"
local rows = {}
local DB = assert(os.getenv("KEVO_TEST_DB"), "KEVO_TEST_DB is not set")
local real_db = assert(archive.open(DB))
local run_id = assert(real_db:run_create{recipe = "llm-faults", strategy = "test", seed = 1})
local journal = {}
function journal:llm_call_add(t)
  rows[#rows + 1] = t
  return real_db:llm_call_add(t)
end
function journal:llm_call_lookup(request) return real_db:llm_call_lookup(request) end

local function rows_for(model)
  local out = {}
  for _, r in ipairs(rows) do if r.model == model then out[#out + 1] = r end end
  return out
end

---------------------------------------------------------------------------------------------
-- The server's record of what it got.

local probe = assert(http.client{concurrency = 1})
local function server_log(model)
  local res = probe:request_many{{url = URL .. "/_log"}}
  local all = assert(json.decode(res[1].body))
  local out = {}
  for _, e in ipairs(all) do if not model or e.model == model then out[#out + 1] = e end end
  return out
end

local BASE_FLAGS = {backoff_base = 0.05, backoff_cap = 0.2, stall_timeout = 3, timeout = 8,
                    connect_timeout = 2, max_attempts = 4, log = false}

local function cfg_for(api, flags)
  local env = {KEVO_LLM_KEY_ENV = "KEVO_TEST_SECRET"}
  if api == "openai" then
    env.KEVO_LLM, env.KEVO_LLM_BASE_URL = "vllm:t/ok", URL .. "/v1"
  else
    env.KEVO_LLM, env.KEVO_LLM_BASE_URL = "anthropic:t/ok", URL
  end
  local f = {}
  for k, v in pairs(BASE_FLAGS) do f[k] = v end
  for k, v in pairs(flags or {}) do f[k] = v end
  return assert(config.llm{env = env, flags = f, dir = "/nonexistent"})
end

local function session(api, flags, extra)
  local opts = {config = cfg_for(api, flags), archive = journal, run = run_id}
  for k, v in pairs(extra or {}) do opts[k] = v end
  return llm.session(opts)
end

local function ask(s, model, more)
  local req = {messages = {{role = "system", content = "be brief"},
                           {role = "user", content = "hello " .. model}}, model = model}
  for k, v in pairs(more or {}) do req[k] = v end
  return s:generate(req)
end

local function elapsed(f)
  local t0 = require("kevo.sys").clock()
  local a, b, c = f()
  return require("kevo.sys").clock() - t0, a, b, c
end

---------------------------------------------------------------------------------------------

-- HTTP dates (IMF-fixdate only; the obsolete forms are not read)
check(llm.http_date("Thu, 01 Jan 1970 00:00:00 GMT") == 0, "http_date epoch")
check(llm.http_date("Sun, 06 Nov 1994 08:49:37 GMT") == 784111777, "http_date RFC example")
check(llm.http_date("Fri, 31 Dec 1999 23:59:59 GMT") == 946684799, "http_date year end")
check(llm.http_date("Tue, 29 Feb 2028 12:00:00 GMT") == 1835438400, "http_date leap day")
check(llm.http_date("Sunday, 06-Nov-94 08:49:37 GMT") == nil and llm.http_date("soon") == nil and
      llm.http_date("Sun, 06 Foo 1994 08:49:37 GMT") == nil and llm.http_date(nil) == nil,
      "http_date refuses other forms")

for _, api in ipairs{"openai", "anthropic"} do
  local s = session(api)
  local P = api .. "/"
  local function m(name) return P .. name end

  -- a plain reply: text, finish, usage, journal, key sent in its header and nowhere else
  local r, msg, code = ask(s, m("ok"))
  if check(r, api .. " ok", msg, code) then
    check(r[1].text == "echo: hello " .. m("ok"), api .. " ok text", r[1].text)
    check(r[1].finish == "stop" and r[1].truncated == false, api .. " ok finish")
    check(r[1].usage.input_tokens > 0 and r[1].usage.output_tokens > 0, api .. " ok usage")
    local got = server_log(m("ok"))[1]
    if api == "openai" then
      check(got.headers.authorization == "Bearer " .. KEY, "openai key sent as Bearer")
      check(got.path == "/v1/chat/completions", "openai path", got.path)
    else
      check(got.headers["x-api-key"] == KEY, "anthropic key sent as x-api-key")
      check(got.headers["anthropic-version"], "anthropic-version header")
      check(got.path == "/v1/messages", "anthropic path", got.path)
      local body = json.decode(got.body)
      check(body.system == "be brief" and #body.messages == 1, "anthropic system apart")
    end
    local st = rows_for(m("ok"))
    check(#st == 1 and st[1].http_status == 200 and st[1].response:find("echo: hello", 1, true),
      api .. " ok stored raw")
    check(st[1].request:find('"provider"', 1, true) and not st[1].request:find(KEY, 1, true),
      api .. " request stored without key")
  end

  -- 429 with Retry-After (seconds): one retry, at least a second later
  r, msg = ask(s, m("r429s"))
  check(r, api .. " 429 Retry-After recovers", msg)
  local log = server_log(m("r429s"))
  check(#log == 2, api .. " 429 retried once", #log)
  if #log == 2 then
    local gap = log[2].t - log[1].t
    check(gap >= 0.9 and gap < 4, api .. " Retry-After: 1 honoured", gap)
  end
  local st = rows_for(m("r429s"))
  check(#st == 2 and st[1].http_status == 429 and st[2].http_status == 200,
    api .. " both attempts stored")

  -- Retry-After as an HTTP date 3 s after the response's Date: one retry, 2 to 3 s later (the
  -- backoff alone would wait 0.5 to 1 s)
  r, msg = ask(s, m("r429date"))
  check(r, api .. " 429 Retry-After date recovers", msg)
  log = server_log(m("r429date"))
  if check(#log == 2, api .. " 429 date retried once", #log) then
    local gap = log[2].t - log[1].t
    check(gap >= 1.9 and gap < 5, api .. " Retry-After: <date> honoured", gap)
  end

  -- retry-after-ms wins over Retry-After
  r, msg = ask(s, m("r429ms"))
  check(r, api .. " retry-after-ms recovers", msg)
  log = server_log(m("r429ms"))
  if check(#log == 2, api .. " retry-after-ms retried once", #log) then
    local gap = log[2].t - log[1].t
    check(gap >= 0.25 and gap < 3, api .. " retry-after-ms: 300 honoured", gap)
  end

  -- three 500s then success: four attempts, backoff between them
  r, msg = ask(s, m("e500x3"))
  check(r and r[1].attempts == 4, api .. " 500x3 then ok after 4 attempts", msg,
    r and r[1].attempts)
  log = server_log(m("e500x3"))
  check(#log == 4, api .. " 500x3 requests", #log)
  if #log == 4 then
    for i = 2, 4 do
      local gap = log[i].t - log[i - 1].t
      check(gap >= 0.02 and gap < 1, api .. " backoff gap " .. i, gap)
    end
  end

  r, msg = ask(s, m("e529"))
  check(r and #server_log(m("e529")) == 2, api .. " 529 retried", msg)

  -- 500 forever: gives up after max_attempts
  r, msg, code = ask(s, m("e500always"))
  check(not r and code == "E_HTTP" and msg:find("gave up after 4 attempts", 1, true),
    api .. " 500 forever gives up", msg, code)
  check(#server_log(m("e500always")) == 4, api .. " 500 forever: 4 attempts")

  -- never retried: 400 401 403 404 413 422 and spend limits
  for _, st_ in ipairs{400, 401, 403, 404, 413, 422} do
    local model = m("e" .. st_)
    r, msg, code = ask(s, model)
    check(not r and code == "E_HTTP" and msg:find("HTTP " .. st_, 1, true),
      api .. " " .. st_ .. " fails", msg, code)
    check(#server_log(model) == 1, api .. " " .. st_ .. " not retried", #server_log(model))
    if st_ == 401 then
      check(msg:find("KEVO_TEST_SECRET", 1, true) and not msg:find(KEY, 1, true),
        api .. " 401 names the key variable, not the key", msg)
    end
  end
  r, msg, code = ask(s, m("spend"))
  check(not r and code == "E_BUDGET" and msg:find("spend limit", 1, true),
    api .. " spend-limit 429", msg, code)
  check(#server_log(m("spend")) == 1, api .. " spend-limit 429 not retried")

  -- cut by the token limit: marked, returned, never compiled
  r, msg = ask(s, m("length"))
  if check(r, api .. " length reply", msg) then
    check(r[1].truncated == true and r[1].finish == "length", api .. " truncated flag",
      r[1].finish)
    local cands, why, ecode = extract.candidates(r[1])
    check(cands == nil and ecode == "E_PARSE" and why:find("token limit", 1, true),
      api .. " truncated reply yields no candidate", why)
  end

  -- malformed body: stored raw, classified, not retried
  r, msg, code = ask(s, m("malformed"))
  check(not r and code == "E_PARSE" and msg:find("malformed JSON", 1, true),
    api .. " malformed body", msg, code)
  st = rows_for(m("malformed"))
  check(#st == 1 and st[1].response:find("<html>oops", 1, true) and st[1].error
    and st[1].error:find("E_PARSE", 1, true), api .. " malformed stored raw with its error")

  -- a connection cut mid-body is a connection error: retried
  r, msg = ask(s, m("cut"))
  check(r and #server_log(m("cut")) == 2, api .. " cut mid-body retried", msg)

  -- n samples in parallel (no native n on a custom server), slow replies
  local t, rr, rmsg = elapsed(function() return ask(s, m("slow"), {n = 8}) end)
  check(rr and #rr == 8, api .. " n=8 replies", rmsg)
  check(t < 3, api .. " n=8 slow batch ran concurrently", t)
  check(#server_log(m("slow")) == 8, api .. " n=8 is 8 requests")
  s:close()
end

-- stalls: a silent socket and one that stops mid-body time out, are retried, then fail
do
  local s = session("openai", {max_attempts = 2, stall_timeout = 0.5})
  for _, sc in ipairs{"stall", "midbody"} do
    local model = "openai/" .. sc
    local t, r, msg, code = elapsed(function() return ask(s, model) end)
    check(not r and code == "E_TIMEOUT", sc .. " times out", msg, code)
    check(#server_log(model) == 2, sc .. " retried once", #server_log(model))
    check(t >= 0.9 and t < 3, sc .. " stall timeout 0.5 s per attempt", t)
  end
  s:close()
end

-- the concurrency cap: 4 slow replies two at a time take two reply times
do
  local s = session("openai", {concurrency = 2})
  local t, r = elapsed(function() return ask(s, "cap/slow", {n = 4}) end)
  check(r and #r == 4 and t >= 1.9 and t < 4, "concurrency cap 2 holds", t)
  s:close()
end

-- connections are reused across calls of one session
do
  local s = session("openai")
  ask(s, "reuse/ok")
  ask(s, "reuse/ok")
  local log = server_log("reuse/ok")
  check(#log == 2 and log[1].conn == log[2].conn, "connection reused across calls",
    log[1] and log[1].conn, log[2] and log[2].conn)
  s:close()
end

-- native n where the server takes it: one request, n choices
do
  local s = session("openai", {native_n = true})
  local r, msg = ask(s, "native/ok", {n = 3})
  check(r and #r == 3 and r[3].text:find("#2", 1, true), "native n=3 replies", msg)
  local log = server_log("native/ok")
  check(#log == 1 and json.decode(log[1].body).n == 3, "native n is one request")
  s:close()
end

-- budgets: checked before each call; refused calls send nothing
do
  local s = session("openai", nil, {budget_tokens = 1000})
  local r, msg, code = ask(s, "budget/ok", {max_tokens = 5000})
  check(not r and code == "E_BUDGET" and msg:find("token budget", 1, true), "token budget refusal",
    msg, code)
  check(#server_log("budget/ok") == 0, "refused call sent nothing")
  r = ask(s, "budget/ok", {max_tokens = 100})
  check(r, "call within budget runs")
  local u = s:usage()
  check(u.input_tokens > 0 and u.total_tokens <= 1000 and u.calls == 2, "usage recorded",
    s:usage_line())
  s:close()

  local cfg = cfg_for("openai", {budget_cost = 0.005})
  cfg.prices["cost/ok"] = {input = 10, output = 10} -- $10 per million tokens
  s = llm.session{config = cfg}
  r, msg, code = ask(s, "cost/ok", {max_tokens = 100}) -- may cost about $0.002
  check(r, "cost within budget", msg)
  check(s:usage().cost > 0, "cost recorded")
  r, msg, code = ask(s, "cost/ok", {max_tokens = 1000}) -- may cost about $0.011
  check(not r and code == "E_BUDGET" and msg:find("cost budget", 1, true), "cost budget refusal",
    msg)
  r, msg, code = ask(s, "noprice/ok")
  check(not r and code == "E_BUDGET" and msg:find("no price", 1, true), "cost budget needs a price",
    msg)
  check(s:usage_line():find("$", 1, true), "usage line shows cost", s:usage_line())
  s:close()
end

-- the opt-in cache answers identical requests from the archive
do
  local s = session("openai", nil, {cache = true})
  local a = ask(s, "cache/ok", {temperature = 0})
  local b = ask(s, "cache/ok", {temperature = 0})
  local c = ask(s, "cache/ok", {temperature = 0.5})
  check(a and b and c and not a[1].cached and b[1].cached and not c[1].cached, "cache hit/miss")
  check(#server_log("cache/ok") == 2, "cached call sent nothing", #server_log("cache/ok"))
  check(b and b[1].text == a[1].text, "cached reply is the stored one")
  s:close()
  s = session("openai") -- without cache: live
  ask(s, "cache/ok", {temperature = 0})
  check(#server_log("cache/ok") == 3, "cache is opt-in")
  s:close()
end

-- a body over its cap is an error, not a crash, and not retried
do
  local s = session("openai", {max_body = 1024 * 1024})
  local r, msg, code = ask(s, "cap/huge")
  check(not r and code == "E_HTTP" and msg:find("cap", 1, true), "body cap", msg, code)
  check(#server_log("cap/huge") == 1, "body cap not retried")
  s:close()
end

-- a refused connection is retried, then reported
do
  local cfg = cfg_for("openai", {max_attempts = 3})
  cfg.base_url = "http://127.0.0.1:1"
  local s = llm.session{config = cfg}
  local r, msg, code = ask(s, "refused/ok")
  check(not r and code == "E_HTTP" and msg:find("gave up after 3", 1, true), "refused", msg)
  s:close()
end

-- batches: several requests in one concurrent batch, each with its own outcome
do
  local s = session("anthropic")
  local res = s:batch{{messages = {{role = "user", content = "a"}}, model = "batch/ok"},
                      {messages = {{role = "user", content = "b"}}, model = "batch/e401"},
                      {messages = {{role = "user", content = "c"}}, model = "batch/length"}}
  check(res[1].ok and res[1][1].text == "echo: a", "batch 1 ok")
  check(res[2].ok == false and res[2].code == "E_HTTP", "batch 2 fails alone")
  check(res[3].ok and res[3][1].truncated, "batch 3 truncated")
  s:close()
end

-- each reply is stored the moment it arrives, while a sibling of the batch is in flight (a
-- kill then loses no reply that came: docs/resume.md)
do
  local clock = require("kevo.sys").clock
  local s = session("openai")
  local t0, stored_at = clock(), {}
  local real_add = journal.llm_call_add
  journal.llm_call_add = function(self, t)
    stored_at[t.model] = clock() - t0
    return real_add(self, t)
  end
  local res = s:batch{{messages = {{role = "user", content = "a"}}, model = "each/ok"},
                      {messages = {{role = "user", content = "b"}}, model = "each/slow"}}
  local took = clock() - t0
  journal.llm_call_add = real_add
  check(res[1].ok and res[2].ok, "batch of a fast and a slow call")
  check(stored_at["each/ok"] and stored_at["each/ok"] < 0.8 and took >= 1,
    "the fast reply is stored before its slow sibling ends", stored_at["each/ok"], took)
  s:close()

  -- kevo.http: on_done sees each response as it ends; an error there abandons the batch
  local c = assert(http.client{concurrency = 4})
  local stall = {url = URL .. "/v1/chat/completions", stall_timeout = 5,
                 body =
                   json.encode{model = "each/stall", messages = {{role = "user", content = "x"}}}}
  local order = {}
  res = c:request_many({{url = URL .. "/_log"}, {url = URL .. "/_log"}}, function(i, r)
    order[#order + 1] = i
    check(r.status == 200, "on_done gets the final response")
  end)
  check(#order == 2 and res[1].status == 200 and res[2].status == 200, "on_done once per request")
  t0 = clock()
  local boom = {}
  local ok, err = pcall(c.request_many, c, {stall, {url = URL .. "/_log"}}, function(i)
    if i == 2 then error(boom) end
  end)
  check(not ok and err == boom and clock() - t0 < 3,
    "an error in on_done abandons the batch and comes out unchanged", err, clock() - t0)
  res = c:request_many{{url = URL .. "/_log"}}
  check(res[1].status == 200, "the client works after an abandoned batch")
  check(not pcall(c.request_many, c, {}, 42), "on_done must be a function")
  c:close()
end

-- misuse raises
do
  local s = session("openai")
  check(not pcall(s.generate, s, {messages = {{role = "user", content = "x"}}, bogus = 1}),
    "unknown option raises")
  check(not pcall(s.generate, s, {messages = {}}), "empty messages raise")
  check(not pcall(probe.request_many, probe, {{url = URL, nope = 1}}), "http unknown key raises")
  check(not pcall(probe.request_many, probe, {{url = URL, headers = {["X"] = "a\r\nb"}}}),
    "header injection raises")
  s:close()
end

-- doctor: configured provider, key presence (never its value), and a live probe
do
  local d = llm.doctor{config = cfg_for("openai")}
  check(d.ok and d.configured and d.key_present and d.reply and d.provider == "vllm"
    and d.key_env == "KEVO_TEST_SECRET", "doctor ok", d.detail)
  local dump = json.encode(d)
  check(not dump:find(KEY, 1, true), "doctor never shows the key")
  local cfg = cfg_for("openai")
  cfg.model = "doc/e401"
  d = llm.doctor{config = cfg}
  check(not d.ok and d.fix and d.code == "E_HTTP", "doctor reports a 401", d.detail)
  d = llm.doctor{config = cfg, probe = false}
  check(d.ok and d.detail:find("not probed", 1, true), "doctor offline")
  cfg.key_env = "KEVO_TEST_NO_SUCH_VAR"
  d = llm.doctor{config = cfg, probe = false}
  check(d.key_present == false, "doctor: key variable absent")
end

-- doctor against a server that accepts the request and never answers: the fix is about the
-- URL and the server, not the key, even when the key's variable is unset
do
  local cfg = cfg_for("openai", {stall_timeout = 1})
  cfg.model, cfg.key_env = "doc/stall", "KEVO_TEST_NO_SUCH_VAR"
  local d = llm.doctor{config = cfg}
  check(not d.ok and d.code == "E_TIMEOUT", "doctor: a stalling server times out", d.detail)
  check(d.fix and not d.fix:find("export", 1, true) and d.fix:find(cfg.base_url, 1, true)
    and d.fix:find("URL", 1, true), "doctor: a stall's fix names the URL and the server", d.fix)
  cfg.base_url = "http://127.0.0.1:1/v1"
  d = llm.doctor{config = cfg}
  check(not d.ok and d.fix and d.fix:find("start the server", 1, true), "doctor: refused", d.fix)
  cfg.base_url, cfg.model = URL .. "/v1", "doc2/e401"
  d = llm.doctor{config = cfg}
  check(d.fix and d.fix:find("export KEVO_TEST_NO_SUCH_VAR", 1, true),
    "doctor: a 401 without the key's variable says to export it", d.fix)
end

-- llm.log: one line per call, failures that are never retried (400, malformed JSON) and
-- calls the budget stopped included
do
  local sys = require "kevo.sys"
  local lines, real_log = {}, sys.log
  sys.log = function(line) lines[#lines + 1] = line end
  local s = session("openai", {log = true})
  local function logged(pat)
    for _, l in ipairs(lines) do if l:find(pat, 1, true) then return l end end
  end
  ask(s, "log/ok")
  ask(s, "log/e400")
  ask(s, "log/malformed")
  ask(s, "log/e500always")
  sys.log = real_log
  check(logged("llm: vllm:log/ok in="), "llm.log: a line for a call that succeeded",
    table.concat(lines, " | "))
  check(logged("llm: vllm:log/e400 failed: E_HTTP: HTTP 400"), "llm.log: a line for a 400",
    table.concat(lines, " | "))
  check(logged("llm: vllm:log/malformed failed: E_PARSE"), "llm.log: a line for malformed JSON",
    table.concat(lines, " | "))
  check(logged("llm: vllm:log/e500always failed: E_HTTP")
    and logged("llm: vllm:log/e500always E_HTTP: HTTP 500"),
    "llm.log: a line per retry and one for the call that gave up", table.concat(lines, " | "))
  s:close()
  lines = {}
  sys.log = function(line) lines[#lines + 1] = line end
  s = session("openai", {log = true}, {budget_tokens = 10})
  local r, msg, code = ask(s, "log/ok")
  sys.log = real_log
  check(not r and code == "E_BUDGET" and msg:find("this call may need", 1, true),
    "a budget smaller than one call", msg)
  check(logged("llm: vllm:log/ok not sent: E_BUDGET: token budget: 0 of 10 tokens used"),
    "llm.log: a line for a call the budget stopped", table.concat(lines, " | "))
  s:close()
end

-- the key is nowhere in what was stored
for i, r in ipairs(rows) do
  local text = json.encode(r)
  if text:find(KEY, 1, true) then check(false, "row " .. i .. " holds the key") end
end
check(#rows > 50, "rows were stored", #rows)
real_db:close()

print(string.format("llm faults: %d checks, %d failed", checks, failures))
return failures == 0 and 0 or 1
