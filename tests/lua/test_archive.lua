-- kevo.archive on a real SQLite file: round trip, strict options, closed handles, errors.
local archive = require "kevo.archive"
local json = require "kevo.json"

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p '" .. dir .. "'"))
local path = dir .. "/k.db"

local function raises(pattern, f, ...)
  local ok, msg = pcall(f, ...)
  assert(not ok, "expected an error matching " .. pattern)
  assert(tostring(msg):find(pattern), "error '" .. tostring(msg) .. "' lacks '" .. pattern .. "'")
end

assert(archive.schema_version == 1)
assert(type(archive.default_path()) == "string")

-- round trip
local db = assert(archive.open(path))
assert(tostring(db):find("kevo.archive.DB", 1, true) and tostring(db):find("k.db", 1, true))
assert(db:path() == path)
local run = db:run_create{recipe = "softmax", strategy = "greedy", config = {beam = 4}, seed = 9,
                          recipe_path = "recipes/softmax.yaml", recipe_hash = string.rep("a", 64)}
assert(math.type(run) == "integer")
local src = "__global__ void k(float *y) {}\n"
local c1 = db:candidate_add{run = run, origin = "seed", lang = "cuda", source = src,
                            knobs = {BLOCK = 256}, launch = "return {kernels = {}}"}
local c2 = db:candidate_add{run = run, parent = c1, origin = "llm", lang = "cuda", source = "B"}
local result =
  {ok = true, verdict = "ok", stage = "done", bench = {speedup = 1.25, median_ms = 0.5}}
local e1 = db:eval_add{candidate = c1, stage = "done", verdict = "ok", ok = true, result = result,
                       fingerprint = {device = "H200", driver = 13000}}
db:eval_add{candidate = c2, stage = "done", verdict = "ok", ok = true, speedup = 2.0,
            median_ms = 0.3125}
db:eval_add{candidate = c2, stage = "verify", verdict = "wrong", ok = false,
            result = '{"verdict":"wrong"}'}
local req = '{"model":"m","messages":[{"role":"user","content":"hi"}]}'
db:llm_call_add{run = run, provider = "openai", model = "m", request = req, response = "nope",
                http_status = 500, error = "E_HTTP: server error"}
local l2 = db:llm_call_add{run = run, provider = "openai", model = "m", request = req,
                           response = '{"raw":true}', http_status = 200, input_tokens = 120,
                           output_tokens = 30, cost = 0.01, ms = 812.5}
assert(l2 > 0)

local r = assert(db:run(run))
assert(r.recipe == "softmax" and r.strategy == "greedy" and r.status == "running" and r.seed == 9)
assert(json.decode(r.config).beam == 4)
assert(r.candidates == 2 and r.evaluations == 3 and r.ok_evaluations == 2)
assert(r.best_speedup == 2.0 and r.input_tokens == 120 and r.output_tokens == 30)
assert(r.kevo_version and r.kevo_commit and r.finished == nil)
assert(db:run(run + 100) == nil)

local cands = db:candidates(run)
assert(#cands == 2 and cands[1].id == c1 and cands[2].parent == c1)
assert(cands[1].source == src and #cands[1].source_hash == 64 and cands[1].launch)
assert(json.decode(cands[1].knobs).BLOCK == 256 and cands[2].best_speedup == 2.0)

local evs = db:evaluations(c1)
assert(#evs == 1 and evs[1].id == e1 and evs[1].ok == true and evs[1].run == run)
assert(evs[1].speedup == 1.25 and evs[1].median_ms == 0.5) -- taken from the result
assert(json.decode(evs[1].fingerprint).device == "H200")
assert(#db:evaluations{run = run} == 3 and #db:evaluations{candidate = c2} == 2)
assert(db:evaluations{run = run}[3].ok == false)

local best = assert(db:best(run))
assert(best.candidate == c2 and best.speedup == 2.0 and best.candidate_source == "B")
local top = db:top(run)
assert(#top == 2 and top[1].id == c2 and top[2].id == c1)
local v = db:verdicts(run)
assert(v.ok == 2 and v.wrong == 1)

-- a JSON column given as a table is stored canonical (keys sorted), whatever order pairs()
-- walks the table in: the same knobs are the same text in every process
local many = {}
for i = 26, 1, -1 do many[string.char(64 + i)] = i end
many.nested = {z = 1, a = {y = 2, b = 3}}
local cm = assert(db:candidate_add{run = run, origin = "seed", lang = "cuda", source = "M",
                                   knobs = many})
local text
for _, c in ipairs(db:candidates(run)) do if c.id == cm then text = c.knobs end end
assert(text == json.encode(many, {canonical = true}), "knobs stored as " .. tostring(text))
assert(text:find('^{"A":1,"B":2,') and text:find('"nested":{"a":{"b":3,"y":2},"z":1}', 1, true))

local resp, row = db:llm_call_lookup(req)
assert(resp == '{"raw":true}' and row.id == l2 and row.http_status == 200)
assert(db:llm_call_lookup(req .. " ") == nil)
-- the range form (a resume settling attempts it stored but did not journal): oldest first,
-- every outcome
local l3 = db:llm_call_add{run = run, provider = "openai", model = "m", request = req,
                           response = '{"raw":3}', http_status = 200}
resp, row = db:llm_call_lookup(req, {run = run, after = l2 - 1, upto = l3})
assert(resp == '{"raw":true}' and row.id == l2)
resp, row = db:llm_call_lookup(req, {run = run, after = l2, upto = l3})
assert(resp == '{"raw":3}' and row.id == l3)
assert(db:llm_call_lookup(req, {run = run, after = l3}) == nil)
resp, row = db:llm_call_lookup(req, {run = run, after = 0, upto = l2 - 1}) -- a failure too
assert(resp == "nope" and row.id == l2 - 1 and row.error)
assert(db:llm_call_lookup(req, {run = run + 1}) == nil)
raises("unknown option 'before'", db.llm_call_lookup, db, req, {run = run, before = 1})
raises("'run' must be an integer", db.llm_call_lookup, db, req, {after = 1})

-- journal: contiguous numbers, exact bytes, iteration
local bin = "a\0b\255\n"
for i = 1, 20 do
  local seq = db:journal_append(run, i % 2 == 0 and "eval" or "llm", "req " .. i,
                                i == 7 and bin or ("resp " .. i))
  assert(seq == i, "seq " .. tostring(seq) .. " for entry " .. i)
end
assert(db:journal_append(run, "llm", "no response yet") == 21)
local kind, q, a = db:journal_get(run, 7)
assert(kind == "llm" and q == "req 7" and a == bin)
assert(db:journal_get(run, 22) == nil)
assert(db:journal_count(run) == 21)
local n = 0
for seq, k, rq, rs in db:journal(run) do
  n = n + 1
  assert(seq == n and rq == (n <= 20 and "req " .. n or "no response yet"))
  assert(k == (n % 2 == 0 and "eval" or "llm"))
  if n == 21 then assert(rs == nil) end
end
assert(n == 21)
n = 0
for seq in db:journal(run, 18) do n = n + 1; assert(seq == 18 + n) end
assert(n == 3)

db:run_finish(run, "done")
assert(db:run(run).status == "done" and db:run(run).finished)
local runs = db:runs()
assert(#runs == 1 and runs[1].id == run and runs[1].journal == 21)

-- strict options and misuse raise
raises("unknown option 'bogus'", db.run_create, db, {recipe = "x", bogus = 1})
raises("unknown option 'sourc'", db.candidate_add, db,
       {run = run, origin = "seed", lang = "cuda", sourc = "x"})
raises("'source' must be a string", db.candidate_add, db,
  {run = run, origin = "seed", lang = "cuda"})
raises("'run' must be an integer", db.candidate_add, db,
  {origin = "seed", lang = "cuda", source = "x"})
raises("'ok' must be a boolean", db.eval_add, db, {candidate = c1, stage = "done", verdict = "ok"})
raises("unknown option 'speed'", db.eval_add, db,
       {candidate = c1, stage = "done", verdict = "ok", ok = true, speed = 2})
raises("no candidate", db.eval_add, db,
  {candidate = 999, stage = "done", verdict = "ok", ok = true})
raises("ok_means_verdict_ok", db.eval_add, db,
       {candidate = c1, stage = "done", verdict = "wrong", ok = true})
raises("unknown option 'tokens'", db.llm_call_add, db, {request = "x", tokens = 3})
raises("FOREIGN KEY", db.candidate_add, db,
  {run = 777, origin = "seed", lang = "cuda", source = "x"})
raises("no run 777", db.run_finish, db, 777, "done")
raises("done, failed or killed", db.run_finish, db, run, "finished")
raises("its run in the archive", function() return db:journal_append(777, "llm", "q") end)
raises("unknown option 'readonyl'", archive.open, path, {readonyl = true})
raises("sync", archive.open, path, {sync = "sometimes"})
raises("exactly one", db.evaluations, db, {})
raises("config_is_json", db.run_create, db, {config = "{oops"})

-- read-only handle: reads work, writes raise
local ro = assert(archive.open(path, {readonly = true}))
assert(#ro:runs() == 1)
raises("read%-only", ro.run_create, ro, {recipe = "x"})
ro:close()

-- closed handles raise; close is idempotent; <close> closes
db:close()
db:close()
assert(tostring(db) == "kevo.archive.DB (closed)")
for _, m in ipairs{"runs", "run", "candidates", "best", "journal_get", "journal_append",
                   "run_create", "path", "journal"} do
  raises("closed", db[m], db, 1, 1, "x")
end
do
  local scoped <close> = assert(archive.open(path))
  assert(#scoped:runs() == 1)
end

-- one transaction: rolled back, nothing of it stays; committed, all of it is there
do
  local tdb = assert(archive.open(dir .. "/tx.db"))
  local r = assert(tdb:run_create{recipe = "t", strategy = "s", config = {}})
  assert(tdb:run_finish(r, "killed"))
  assert(tdb:begin())
  local c = assert(tdb:candidate_add{run = r, origin = "seed", lang = "cuda", source = "x"})
  assert(tdb:eval_add{candidate = c, stage = "done", verdict = "error", ok = false})
  assert(tdb:journal_append(r, "evaluate", "{}", "{}") == 1)
  tdb:rollback()
  assert(#tdb:candidates(r) == 0 and tdb:journal_count(r) == 0)
  tdb:rollback() -- none open: nothing happens
  assert(tdb:begin())
  c = assert(tdb:candidate_add{run = r, origin = "seed", lang = "cuda", source = "x"})
  assert(tdb:journal_append(r, "evaluate", "{}", "{}") == 1)
  assert(tdb:commit())
  assert(#tdb:candidates(r) == 1 and tdb:journal_count(r) == 1)
  -- a finished run runs again (kevo run --resume)
  assert(tdb:run(r).status == "killed" and tdb:run(r).finished)
  assert(tdb:run_reopen(r))
  assert(tdb:run(r).status == "running" and tdb:run(r).finished == nil)
  raises("no run", tdb.run_reopen, tdb, 999)
  tdb:close()
  local ro = assert(archive.open(dir .. "/tx.db", {readonly = true}))
  raises("read%-only", ro.run_reopen, ro, r)
  raises("read%-only", ro.begin, ro)
  ro:close()
end

-- expected failures return nil, msg, "E_DB"
local garbage = dir .. "/garbage.db"
local f = assert(io.open(garbage, "wb"))
f:write(string.rep("this is not a database\n", 400))
f:close()
local none, msg, code = archive.open(garbage)
assert(none == nil and code == "E_DB" and msg:find("^E_DB: ") and msg:find(garbage, 1, true), msg)
none, msg, code = archive.open(dir .. "/absent.db", {readonly = true})
assert(none == nil and code == "E_DB", msg)

os.execute("rm -rf '" .. dir .. "'")
print("archive ok")
