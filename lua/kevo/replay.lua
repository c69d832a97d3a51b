-- kevo.replay: the driver behind `kevo replay RUN [--strategy FILE] [--step] [--db PATH]`
-- (runtime/cmd_replay.c calls main(argv, host); docs/resume.md).
--
-- Re-runs a run's strategy against its journal: the search context gets every evaluation
-- result, LLM proposal and clock stop from the journal (kevo.journal, mode "replay"); there is
-- no evaluator, no LLM session and no write to the archive (it is opened read-only). Each
-- journal entry is printed as it is consumed; --step waits for Enter after each. A changed
-- strategy (--strategy FILE) is checked against the recorded history: the first request that
-- does not match is reported as the divergence point, and the replay goes on offline, answered
-- from the journal where it holds the same request, else with E_REPLAY (no answer).
local json = require "kevo.json"
local kevo = require "kevo"
local search = require "kevo.search"
local journal = require "kevo.journal"
local run = require "kevo.run"

local M = {}

local EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

local USAGE =
  "usage: kevo replay RUN|last [--strategy FILE] [--step] [--db PATH] (see kevo replay --help)"

local function parse_args(argv)
  local cfg = {}
  local i = 1
  while i <= #argv do
    local a = argv[i]
    local flag, val = a:match("^(%-%-[%w-]+)=(.*)$")
    flag = flag or a
    if flag == "--step" then
      cfg.step = true
    elseif flag == "--strategy" or flag == "--db" then
      if not val then
        i = i + 1
        val = argv[i]
        if not val then run.usage_error("%s needs a value", flag) end
      end
      if flag == "--strategy" then cfg.strategy = val else cfg.db = val end
    elseif flag:sub(1, 2) == "--" then
      run.usage_error("unknown option '%s'", flag)
    elseif cfg.run then
      run.usage_error("one run expected, got '%s' and '%s'", tostring(cfg.run), a)
    else
      cfg.run = a == "last" and a or math.tointeger(tonumber(a))
      if not cfg.run or cfg.run == 0 or (a ~= "last" and cfg.run < 1) then
        run.usage_error("RUN is a run id or last, got '%s'", a)
      end
    end
    i = i + 1
  end
  if not cfg.run then run.usage_error("a run id is required") end
  return cfg
end

local function verdicts(results)
  local o = {}
  for i, r in ipairs(results or {}) do
    if i > 6 then
      o[#o + 1] = "..."
      break
    end
    local b = type(r.bench) == "table" and r.bench or {}
    o[#o + 1] = r.ok and string.format("ok %.3gx", b.speedup or 0) or tostring(r.verdict)
  end
  return table.concat(o, ", ")
end

-- One line for a journal entry.
function M.describe(e)
  local r = e.response
  local req = json.decode(e.request) or {}
  local at = string.format("%4d  %7.2f s  ", e.seq, r.t or 0)
  if e.kind == "evaluate" then
    local ids = {}
    for i, id in ipairs(r.ids or {}) do ids[i] = id == false and "-" or tostring(id) end
    return at .. string.format("evaluate %d candidate(s) [%s] -> %s", #(req.cands or {}),
                               table.concat(ids, " "), verdicts(r.results))
  elseif e.kind == "propose" then
    if type(r.stop) == "table" then
      return at .. string.format("propose for candidate %s -> stop (%s)",
                                 tostring(req.parent and req.parent.id), tostring(r.stop.reason))
    end
    return at .. string.format("propose %d for candidate %s -> %d candidate(s), %d tokens",
                               req.n or 0, tostring(req.parent and req.parent.id),
                               #(r.cands or {}), r.tokens or 0)
  elseif e.kind == "stop" then
    return at .. string.format("stop: %s (%s)", tostring(r.reason), tostring(r.message))
  elseif e.kind == "resume" then
    return at .. string.format("resumed here (budgets: evals %s, time %s, tokens %s)",
                               tostring(r.max_evals or "-"), tostring(r.time_s or "-"),
                               tostring(r.max_tokens or "-"))
  end
  return at .. e.kind
end

local function refuse(what)
  return function() error("kevo replay: the " .. what .. " was asked during a replay", 0) end
end

function M.main(argv, host)
  local ok, rc = pcall(M.execute, argv, host)
  if ok then return rc end
  if type(rc) == "table" and rc.message then
    kevo.log("kevo replay: %s\n%s", rc.message, USAGE)
    return EXIT_USAGE
  end
  kevo.log("kevo replay: %s", tostring(rc))
  return EXIT_FAILED
end

function M.execute(argv, host)
  local cfg = parse_args(argv)
  local archive = require "kevo.archive"
  local dbpath = cfg.db or archive.default_path()
  local db, dberr = archive.open(dbpath, {readonly = true})
  if not db and tostring(dberr):find("no run has been recorded there yet", 1, true) then
    run.usage_error("no archive at %s (kevo run creates it; or --db PATH / KEVO_DB)", dbpath)
  elseif not db then
    run.archive_failed(dberr)
  end
  if cfg.run == "last" then -- as kevo show, report and export take it: the newest run
    local runs = assert(db:runs())
    if #runs == 0 then run.usage_error("the archive %s holds no runs yet", db:path()) end
    cfg.run = runs[#runs].id
  end
  local row, rec, n = run.recorded(db, cfg.run)
  local task = run.load_task(rec.recipe, host)
  local strat, sopts = run.load_strategy(cfg.strategy or rec.strategy, rec.sets, host, {
    seed = row.seed or 1, on_log = function(line) print("        " .. line) end})
  local seeds = run.task_seeds(task, host)
  math.randomseed(row.seed or 1)

  local tape = journal.open{db = db, run = cfg.run, mode = "replay", status = row.status}
  local waiting = cfg.step
  tape.on_step = function(e)
    print(M.describe(e))
    if waiting then waiting = host.wait("  [Enter: next step] ") end
  end
  tape.on_diverge = function(d)
    print(tostring(d))
    print("  (from here on the replay is offline: answers only where the journal holds the " ..
          "same request)")
  end
  local ctx = search.new{
    task = task, seeds = seeds, run = cfg.run, seed = row.seed or 1,
    evaluator = {evaluate_many = refuse("evaluator")},
    proposer = rec.llm and {propose = refuse("LLM")} or nil,
    max_evals = rec.max_evals, time_s = rec.time_s, max_tokens = rec.max_tokens, tape = tape,
    on_log = function(line) print("        " .. line) end,
    on_offline = function(msg) print("        offline: " .. msg) end,
  }
  print(string.format("replay of run %d: %s on %s, seed %d, %d journal entries%s", cfg.run,
                      strat.name, task.name or rec.recipe, row.seed or 1, n,
                      cfg.strategy and (" (strategy from " .. cfg.strategy .. ")") or ""))
  local okr, err = pcall(strat.run, ctx, sopts)
  if okr then tape:finish() end
  local ended = "the strategy returned"
  if not okr then
    if search.is_stop(err) then
      ended = "stopped: " .. err.reason .. (err.message and (" (" .. err.message .. ")") or "")
    else
      print("the strategy failed: " .. tostring(err))
      ended = "the strategy failed"
    end
  end
  local misses = 0
  for _, e in ipairs(ctx._entries) do
    if type(e.message) == "string" and e.message:find("^E_REPLAY") then misses = misses + 1 end
  end
  print(string.format("replayed %d of %d journal entries; %s", tape.steps, n, ended))
  if tape.diverged then
    print(string.format("diverged at seq %d; after it %d request(s) went offline, %d " ..
                        "evaluation(s) had no recorded answer", tape.diverged.seq, tape.offline,
                        misses))
  else
    print("no divergence: the strategy asked exactly what the journal holds")
  end
  local b = ctx.best
  if b then
    local bench = b.bench or {}
    print(string.format("best: candidate %d, %.2fx the reference (%.4g ms)%s", b.id, b.score or 0,
                        bench.median_ms or 0, b.candidate.knobs and next(b.candidate.knobs) and
                        ("  knobs: " .. search.knobs_key(b.candidate.knobs)) or ""))
  else
    print("best: none verified")
  end
  print(string.format("%d evaluations, %d tokens, %.1f s of run time", ctx.evals, ctx.tokens,
                      ctx:elapsed()))
  db:close()
  if not okr and not search.is_stop(err) then return EXIT_FAILED end
  return tape.diverged and EXIT_FAILED or EXIT_OK
end

return M
