-- kevo.suite: the driver behind `kevo suite PATH...` (runtime/cmd_suite.c calls main(args, host)).
--
-- A suite is a search on each of many problems (recipes, KernelBench problem files, or folders
-- of them) with the options of kevo run, each problem's budgets its own, as one job in the
-- archive: a row of `runs` whose strategy is "suite" and whose config lists the problems and
-- the options. Each problem's search is an ordinary run (kevo.run's execute), its config naming
-- the suite ({suite = {id, index}}), so it is journaled, resumable and reported like any run;
-- the suite's own journal holds one `problem` entry per finished problem. Problems run one
-- after another; each batch of each is spread over the workers (--gpus, docs/suite.md).
--
-- `kevo suite --resume N` goes on: finished problems are read back, a problem whose run was cut
-- short is resumed through its own journal (kevo run --resume), the rest run live.
local json = require "kevo.json"
local kevo = require "kevo"
local run = require "kevo.run"
local journal = require "kevo.journal"
local suite_report = require "kevo.report.suite"

local M = {}

local EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

local USAGE = "usage: kevo suite PATH... [--strategy NAME] [--llm PROVIDER:MODEL] " ..
              "[--budget-tokens N] [--max-evals N] [--time DURATION] [--set KEY=VALUE]... " ..
              "[--seed N] [--db PATH] [--arch sm_XX] [--gpus all|0,1] " ..
              "[--eval redis://HOST:PORT/DB [--eval-password-env VAR] [--jobs N]] " ..
              "[--out DIR] [--json FILE]\n" ..
              "       kevo suite --resume SUITE [--gpus ...] [--eval ...] [--jobs N] " ..
              "[--db PATH] [--out DIR] [--json FILE] (see kevo suite --help)"

-- The options a resume may give anew (where the evaluations run, where things are kept); the
-- rest are the suite's own, recorded when it started.
local RESUME_TAKES = {["--gpus"] = true, ["--eval"] = true, ["--eval-password-env"] = true,
                      ["--db"] = true, ["--out"] = true}
-- Where evaluations run: given anew on a resume, they replace the recorded ones together.
local WHERE = {["--gpus"] = true, ["--eval"] = true, ["--eval-password-env"] = true}


-- --jobs N > 1 judges N problems at once: only through Redis, whose workers judge one job at a
-- time (docs/suite.md "Why problems do not overlap"); on local GPUs they would share timings.
local function check_jobs(o)
  if o.jobs and o.jobs > 1 and not o.cfg.eval then
    run.usage_error("--jobs %d judges %d problems at once: give --eval redis://... (its workers " ..
                    "judge one job at a time); on local GPUs they would share their timings",
                    o.jobs, o.jobs)
  end
end

-- Parses argv: {paths = {...}, flags = {run flags, as given}, resume = N, json = FILE, cfg =
-- kevo.run's config for those flags}. Raises kevo.run's usage errors.
function M.parse_args(argv)
  local o = {paths = {}, flags = {}}
  local i = 1
  while i <= #argv do
    local a = argv[i]
    local flag, val = a:match("^(%-%-[%w-]+)=(.*)$")
    flag = flag or a
    if flag:sub(1, 2) == "--" then
      -- kevo run's options (all passed on to each problem's run), --resume and --json
      if flag ~= "--json" and flag ~= "--jobs" and flag ~= "--problem" and not run.TAKES[flag] then
        run.usage_error("unknown option '%s'", flag)
      end
      if not val then
        i = i + 1
        val = argv[i]
        if val == nil then run.usage_error("%s needs a value", flag) end
      end
      if flag == "--resume" then
        o.resume = math.tointeger(tonumber(val))
        if not o.resume or o.resume < 1 then run.usage_error("--resume takes a suite id") end
      elseif flag == "--json" then
        o.json = val
      elseif flag == "--jobs" or flag == "--problem" then
        local v = math.tointeger(tonumber(val))
        if not v or v < 1 then run.usage_error("%s takes a positive integer", flag) end
        o[flag:sub(3)] = v
      else
        o.flags[#o.flags + 1] = flag
        o.flags[#o.flags + 1] = val
      end
    else
      o.paths[#o.paths + 1] = a
    end
    i = i + 1
  end
  if o.problem and not o.resume then
    run.usage_error("--problem I runs problem I of a suite: it goes with --resume SUITE")
  end
  if o.resume then
    if #o.paths > 0 then
      run.usage_error("--resume takes the problems from suite %d: drop '%s'", o.resume, o.paths[1])
    end
    for j = 1, #o.flags, 2 do
      local f = o.flags[j]
      if not RESUME_TAKES[f] then
        run.usage_error("--resume takes %s from suite %d (recorded when it started): drop %s",
                        f:sub(3), o.resume, f)
      end
    end
  elseif #o.paths == 0 then
    run.usage_error("which problems? (recipes, KernelBench problem files, or folders of them)")
  end
  -- the flags checked as kevo run checks them, with a stand-in recipe
  local args = {"suite-problem"}
  for _, f in ipairs(o.flags) do args[#args + 1] = f end
  o.cfg = run.parse_args(args)
  o.cfg.recipe = nil
  if not o.resume then check_jobs(o) end -- a resume's --eval may be the recorded one
  return o
end

-- The problems the paths name: a folder gives its *.yaml and *.py files (by name, not
-- recursive); anything else is one problem (a recipe file or packaged name, or a .py file).
local function expand(paths, host)
  local out = {}
  for _, p in ipairs(paths) do
    local entries = host.list_dir(p)
    if entries then
      local base = p:gsub("/+$", "")
      local before = #out
      for _, e in ipairs(entries) do
        if not e.dir and (e.name:match("%.ya?ml$") or e.name:match("%.py$")) then
          out[#out + 1] = base .. "/" .. e.name
        end
      end
      if #out == before then
        run.usage_error("%s holds no recipe (.yaml) or problem file (.py)", p)
      end
    else
      out[#out + 1] = p
    end
  end
  local list = {}
  for i, path in ipairs(out) do
    list[i] = {path = path, kind = path:match("%.py$") and "kbench" or "recipe"}
  end
  return list
end

-- The recipe a problem is searched on: itself, or (a KernelBench file) the recipe `kevo import`
-- makes of it under OUT/suite-ID/problems/NN/ (made once; a resume finds it there). The folder
-- keeps problems of one name apart; the recipe keeps the file's name, so its kernel's name is
-- the problem's ("19_ReLU.py" -> relu_kernel), as with kevo import.
local function recipe_of(prob, i, sid, cfg, host)
  if prob.kind ~= "kbench" then return prob.path end
  local dir = ("%s/suite-%d/problems/%02d"):format(cfg.out or "kevo-out", sid, i)
  local name = (prob.path:match("([^/]+)%.py$") or "problem"):gsub("[^%w_.-]", "_")
  local yaml = dir .. "/" .. name .. ".yaml"
  if host.read_file(yaml) then return yaml end
  local rc = host.import(prob.path, dir, name)
  if rc ~= 0 then return nil, ("kevo import %s failed (exit %d)"):format(prob.path, rc) end
  return yaml
end

local function fmt_elapsed(s)
  s = math.floor(s)
  if s >= 3600 then return string.format("%d:%02d:%02d", s // 3600, s % 3600 // 60, s % 60) end
  return string.format("%d:%02d", s // 60, s % 60)
end

-- The suite's progress bar: problems done, evaluations (all problems), the best speed-up of the
-- problem being searched, tokens, time.
local function make_bar(st)
  return function(ctx)
    local width = 20
    local done = st.done
    local fill = math.floor(width * done / math.max(1, st.total))
    local evals = st.evals + (ctx and ctx.evals or 0)
    local tokens = st.tokens + (ctx and ctx.tokens or 0)
    local best = ctx and ctx.best and string.format("best %.2fx", ctx.best.score or 0) or "best -"
    local parts = {
      string.format("suite %d [%s%s] %d/%d problems", st.id, string.rep("#", fill),
                    string.rep("-", width - fill), done, st.total),
      string.format("%s: %s", st.current or "-", best),
      string.format("evals %d", evals),
    }
    if tokens > 0 then parts[#parts + 1] = string.format("tokens %d", tokens) end
    parts[#parts + 1] = fmt_elapsed(kevo.clock() - st.t0)
    return table.concat(parts, "  ")
  end
end

-- What the suite's journal says of its finished problems, by index.
local function finished_of(db, sid)
  local finished = {}
  for _, kind, req, resp in db:journal(sid) do
    if kind == "problem" then
      local q, a = json.decode(req), json.decode(resp)
      if type(q) == "table" and type(a) == "table" then finished[q.index] = a end
    end
  end
  return finished
end

-- The runs of suite sid by problem index (the newest of each), from the archive.
local function runs_of(db, sid)
  local by = {}
  for _, r in ipairs(assert(db:runs())) do
    local c = type(r.config) == "string" and json.decode(r.config) or r.config
    local s = type(c) == "table" and type(c.suite) == "table" and c.suite
    if s and s.id == sid and math.tointeger(s.index) then by[s.index] = r end
  end
  return by
end

-- Through --eval (Redis) a KernelBench problem file is refused before the suite starts, naming
-- them: its PyTorch reference cannot follow a job to a remote worker (run.TORCH_OVER_REDIS). A
-- recipe with a PyTorch reference (one kevo import wrote) is refused when its turn comes: a
-- line with that error, and the suite goes on.
local function refuse_torch_over_redis(problems, cfg)
  if not cfg.eval then return end
  local names = {}
  for _, p in ipairs(problems) do
    if p.kind == "kbench" then names[#names + 1] = p.path:match("([^/]+)$") or p.path end
  end
  if #names == 0 then return end
  run.usage_error("--eval: %s: a KernelBench problem (a PyTorch reference) %s; or leave %s out " ..
                  "of this suite", table.concat(names, ", "), run.TORCH_OVER_REDIS,
                  #names == 1 and "it" or "them")
end

-- The suite's row: a new one (its problems and options recorded), or the one to resume.
local function open_suite(o, db, host)
  if o.resume then
    local row = db:run(o.resume)
    if not row then run.usage_error("no suite %d in the archive %s", o.resume, db:path()) end
    local c = json.decode(row.config or "null")
    if row.strategy ~= "suite" or type(c) ~= "table" or type(c.problems) ~= "table" then
      run.usage_error("run %d is not a suite (kevo run --resume %d goes on with a run)", o.resume,
                      o.resume)
    end
    -- the recorded options, with --gpus or --eval, --db and --out as given now
    local anew = {}
    for j = 1, #o.flags, 2 do anew[o.flags[j]] = true end
    local moved = anew["--gpus"] or anew["--eval"]
    local flags = {}
    local rf = c.flags or {}
    for j = 1, #rf, 2 do
      if not anew[rf[j]] and not (moved and WHERE[rf[j]]) then
        flags[#flags + 1], flags[#flags + 2] = rf[j], rf[j + 1]
      end
    end
    for _, f in ipairs(o.flags) do flags[#flags + 1] = f end
    local args = {"suite-problem"}
    for _, f in ipairs(flags) do args[#args + 1] = f end
    o.cfg = run.parse_args(args)
    o.cfg.recipe = nil
    if row.status == "running" then
      kevo.log("kevo suite: suite %d is marked running: resuming it as one whose kevo died",
               row.id)
    end
    assert(db:run_reopen(row.id))
    return row.id, c.problems
  end
  local problems = expand(o.paths, host)
  refuse_torch_over_redis(problems, o.cfg)
  local sid = assert(db:run_create{
    recipe = ("suite of %d problem%s"):format(#problems, #problems == 1 and "" or "s"),
    strategy = "suite", seed = o.cfg.seed,
    config = journal.canonical({kind = "suite", problems = problems, flags = json.array(o.flags),
                                strategy = o.cfg.strategy, sets = json.array(o.cfg.sets)}),
  })
  return sid, problems
end

-- One problem's search (a new run, or the resume of the one cut short). Returns the entry the
-- suite's journal records: {run, exit, status, reference, error}.
local function search_one(o, db, sid, i, prob, existing, host, st)
  local cfg
  if existing then
    local args = {"--resume", tostring(existing.id)}
    for j = 1, #o.flags, 2 do
      local f = o.flags[j]
      if WHERE[f] or f == "--db" or f == "--out" or f == "--max-evals" or f == "--time" or
        f == "--budget-tokens" then
        args[#args + 1], args[#args + 2] = f, o.flags[j + 1]
      end
    end
    cfg = run.parse_args(args)
    cfg.gpus, cfg.eval, cfg.eval_password_env = o.cfg.gpus, o.cfg.eval, o.cfg.eval_password_env
  else
    cfg = {}
    for k, v in pairs(o.cfg) do cfg[k] = v end
    local recipe, why = recipe_of(prob, i, sid, o.cfg, host)
    if not recipe then return {exit = EXIT_FAILED, status = "failed", error = why} end
    cfg.recipe = recipe
    cfg.suite = {id = sid, index = i}
  end
  local okx, rc, run_id, r = pcall(run.execute, cfg, host)
  if not okx then
    local msg = run.is_usage(rc) and rc.message or tostring(rc)
    host.clear_progress()
    kevo.log("kevo suite: problem %d (%s): %s", i, prob.path, msg)
    if run.open_run then
      db:run_finish(run.open_run.id, "failed")
      run_id = run.open_run.id
      run.open_run = nil
    end
    return {run = run_id, exit = run.is_usage(rc) and EXIT_USAGE or EXIT_FAILED,
            status = "failed", error = msg}
  end
  local row = db:run(run_id) or {}
  local ref = r and r.task and r.task.reference
  return {run = run_id, exit = rc, status = row.status,
          reference = type(ref) == "table" and ref.lang or nil,
          evals = row.evaluations, tokens = (row.input_tokens or 0) + (row.output_tokens or 0)}
end

function M.execute(o, host)
  local archive = require "kevo.archive"
  local dbpath = o.cfg.db or archive.default_path()
  for j = 1, #o.flags, 2 do if o.flags[j] == "--db" then dbpath = o.flags[j + 1] end end
  local db, dberr = archive.open(dbpath)
  if not db then run.archive_failed(dberr) end
  local sid, problems = open_suite(o, db, host)
  if o.resume then dbpath = o.cfg.db or dbpath end
  o.cfg.db = dbpath
  local finished = finished_of(db, sid)
  local st = {id = sid, total = #problems, done = 0, evals = 0, tokens = 0, t0 = kevo.clock()}
  local bar = make_bar(st)
  -- each run draws the suite's bar from its context
  local shost = setmetatable({
    progress_ctx = function(ctx) host.progress(bar(ctx)) end,
  }, {__index = host})
  kevo.log("kevo suite %d: %s%d problem(s)%s", sid, o.resume and "resuming, " or "", #problems,
           o.cfg.gpus and (", --gpus " .. o.cfg.gpus) or "")
  check_jobs(o)
  if o.problem then return M.one_problem(o, db, sid, problems, finished, host) end
  local status = "done"
  if o.jobs and o.jobs > 1 then -- the children noted what they finished
    status = M.at_once(o, db, sid, problems, finished, host)
    finished = finished_of(db, sid)
  end
  local existing = runs_of(db, sid)
  -- the test hook KEVO_FAULT=suite:N: kevo kills itself once N problems are noted
  local fault = tonumber((host.getenv("KEVO_FAULT") or ""):match("^suite:(%d+)$") or "")
  local noted = 0
  for i, prob in ipairs(problems) do
    local f = finished[i]
    if not f and status == "killed" then break end
    if not f then
      local ex = existing[i]
      if ex and (ex.status == "done" or ex.status == "failed") then
        -- finished, but the suite was stopped before it noted so: noted now, not searched again
        f = {run = ex.id, exit = ex.status == "done" and EXIT_OK or EXIT_FAILED,
             status = ex.status, evals = ex.evaluations,
             tokens = (ex.input_tokens or 0) + (ex.output_tokens or 0)}
      else
        st.current = prob.path:match("([^/]+)$")
        host.progress(bar(nil))
        f = search_one(o, db, sid, i, prob, ex, shost, st)
        if host.interrupted() or f.status == "killed" then
          status = "killed"
          break
        end
      end
      assert(db:journal_append(sid, "problem", journal.canonical({index = i, path = prob.path}),
                               journal.canonical(f)))
      finished[i] = f
      noted = noted + 1
      if fault and noted == fault then host.die() end
    end
    st.done = st.done + 1
    st.evals = st.evals + (f.evals or 0)
    st.tokens = st.tokens + (f.tokens or 0)
  end
  if host.tty then host.clear_progress() end
  db:run_finish(sid, status)
  local m = suite_report.gather(db, assert(db:run(sid)))
  db:close()
  print((suite_report.text(m):gsub("\n$", "")))
  if o.json then
    local okw, werr = host.write_file(o.json, json.encode(suite_report.summary(m),
                                                          {pretty = true}) .. "\n")
    if not okw then kevo.log("kevo suite: cannot write %s: %s", o.json, tostring(werr)) end
  end
  if status == "killed" then
    print(("stopped: kevo suite --resume %d goes on"):format(sid))
    return EXIT_FAILED
  end
  return m.summary.fast.ref[1].n > 0 and EXIT_OK or EXIT_FAILED
end

-- kevo suite --resume SID --problem I: problem I alone (a child of --jobs), noted in the suite's
-- journal; no table. Its exit code is the problem's.
function M.one_problem(o, db, sid, problems, finished, host)
  local i = o.problem
  local prob = problems[i]
  if not prob then run.usage_error("suite %d has no problem %d", sid, i) end
  if finished[i] then return finished[i].exit or EXIT_OK end
  local ex = runs_of(db, sid)[i]
  local f
  if ex and (ex.status == "done" or ex.status == "failed") then
    f = {run = ex.id, exit = ex.status == "done" and EXIT_OK or EXIT_FAILED, status = ex.status,
         evals = ex.evaluations, tokens = (ex.input_tokens or 0) + (ex.output_tokens or 0)}
  else
    f = search_one(o, db, sid, i, prob, ex, host, {})
    if host.interrupted() or f.status == "killed" then return EXIT_FAILED end
  end
  assert(db:journal_append(sid, "problem", journal.canonical({index = i, path = prob.path}),
                           journal.canonical(f)))
  return f.exit or EXIT_OK
end

-- kevo suite --jobs N: the problems not finished yet, N at a time, each a child kevo
-- (kevo suite --resume SID --problem I) whose output goes to OUT/suite-SID/problem-I.log; they
-- judge through --eval's Redis workers, one job at a time per worker. Returns "done", or
-- "killed" when interrupted (the children die with a Ctrl-C too; --resume goes on).
function M.at_once(o, db, sid, problems, finished, host)
  local out = (o.cfg.out or "kevo-out") .. "/suite-" .. sid
  local base = {"suite", "--resume", tostring(sid), "--db", o.cfg.db}
  for j = 1, #o.flags, 2 do
    if RESUME_TAKES[o.flags[j]] and o.flags[j] ~= "--db" then
      base[#base + 1], base[#base + 2] = o.flags[j], o.flags[j + 1]
    end
  end
  local todo, running = {}, {}
  for i = 1, #problems do if not finished[i] then todo[#todo + 1] = i end end
  kevo.log("kevo suite %d: %d problem(s) to search, %d at a time (logs in %s/)", sid, #todo,
           o.jobs, out)
  local next_todo, n_running = 1, 0
  local stop_by
  while next_todo <= #todo or n_running > 0 do
    -- a Ctrl-C reaches the children too: no new one, and up to 30 s for them to stop
    if host.interrupted() then
      stop_by = stop_by or kevo.clock() + 30
      if n_running == 0 or kevo.clock() > stop_by then return "killed" end
      next_todo = #todo + 1
    end
    while n_running < o.jobs and next_todo <= #todo do
      local i = todo[next_todo]
      next_todo = next_todo + 1
      local args = {table.unpack(base)}
      args[#args + 1], args[#args + 2] = "--problem", tostring(i)
      local pid, err = host.spawn(args, ("%s/problem-%02d.log"):format(out, i))
      if not pid then error(("problem %d: %s"):format(i, tostring(err)), 0) end
      running[pid] = i
      n_running = n_running + 1
    end
    host.sleep(0.1)
    for pid, i in pairs(running) do
      local rc = host.reap(pid)
      if rc then
        running[pid] = nil
        n_running = n_running - 1
        kevo.log("kevo suite %d: problem %d (%s): exit %d", sid, i,
                 problems[i].path:match("([^/]+)$") or problems[i].path, rc)
      end
    end
  end
  return stop_by and "killed" or "done"
end

function M.main(argv, host)
  local okp, o = pcall(M.parse_args, argv)
  if not okp then
    if run.is_usage(o) then
      kevo.log("kevo suite: %s\n%s", o.message, USAGE)
      return EXIT_USAGE
    end
    error(o, 0)
  end
  local okr, rc = pcall(M.execute, o, host)
  if okr then return rc end
  host.clear_progress()
  if run.is_usage(rc) then
    kevo.log("kevo suite: %s", rc.message)
    return EXIT_USAGE
  end
  kevo.log("kevo suite: %s", tostring(rc))
  return EXIT_FAILED
end

return M
