-- kevo.report: what a run found, read back from the archive. `kevo report` prints a terminal
-- summary, its JSON (--json), or one self-contained HTML page (--html FILE, kevo.report.html).
--
--   local report = require "kevo.report"
--   local db, msg, code = report.open(path)        -- read-only; code is the exit code on failure
--   local run, msg = report.find_run(db, "last")   -- a run row, or nil
--   local m = report.gather(db, run)               -- the model every view is drawn from
--   report.text(m), report.summary(m)              -- terminal text, JSON-ready table
--   report.main(args)                              -- `kevo report` itself; returns the exit code
local archive = require "kevo.archive"
local json = require "kevo.json"

local M = {}

local function decode(text)
  if type(text) ~= "string" then return text end
  local v = json.decode(text)
  if type(v) ~= "table" then return nil end
  return v
end

-- open(path): the archive read-only, or nil, message, exit code (2: no archive, 1: unreadable).
function M.open(path)
  local f = io.open(path, "rb")
  if not f then
    return nil, ("no archive at %s (kevo run creates it; or --db PATH / KEVO_DB)"):format(path), 2
  end
  f:close()
  local db, msg = archive.open(path, {readonly = true})
  if not db then return nil, (tostring(msg):gsub("^E_%u+: ", "")), 1 end -- it names the archive
  return db
end

-- find_run(db, spec): spec is an id or "last". Returns the run row (with counts) or nil, msg.
function M.find_run(db, spec)
  if spec == "last" then
    local runs = assert(db:runs())
    if #runs == 0 then return nil, "the archive holds no runs yet" end
    return runs[#runs]
  end
  local id = math.tointeger(tonumber(spec))
  if not id then return nil, ("'%s' is not a run id (a number, or last)"):format(tostring(spec)) end
  local run = db:run(id)
  if not run then return nil, ("no run %d in %s (kevo runs lists them)"):format(id, db:path()) end
  return run
end

-- lineage(by_id, id): the chain of candidates from the root to id (cycles cut).
function M.lineage(by_id, id)
  local chain, seen = {}, {}
  while id and by_id[id] and not seen[id] do
    seen[id] = true
    table.insert(chain, 1, by_id[id])
    id = by_id[id].parent
  end
  return chain
end

-- synthetic_model(config): the model file of a run evaluated by the model evaluator
-- (KEVO_EVALUATOR=model:FILE, recorded as evaluator_spec), or nil for a run measured on a GPU.
function M.synthetic_model(config)
  local spec = type(config) == "table" and config.evaluator_spec
  return type(spec) == "string" and spec:match("^model:(.+)$") or nil
end

-- The line every view shows for a synthetic run.
function M.synthetic_line(model)
  return ("SYNTHETIC: every verdict and time of this run comes from the model evaluator %s " ..
          "(KEVO_EVALUATOR), not from a GPU: nothing was measured"):format(model)
end

-- gather(db, run): the model of a run every view draws from.
--   run (row, config decoded), duration_s, verdicts {{verdict=, n=}}, llm {calls, input_tokens,
--   output_tokens, cost}, candidates (id order; each with best evaluation `eval`, children),
--   evals (id order; result/fingerprint decoded; tokens = LLM tokens spent by then;
--   best_so_far), best (an eval, with candidate), lineage (candidates root..best), synthetic
--   (the model file when the model evaluator computed the results, else nil), profiles
--   (candidate id -> its profile, when a strategy asked for one: ctx:profile).
function M.gather(db, run)
  local m = {run = run, verdicts = {}, candidates = {}, evals = {}, by_id = {}}
  run.config = decode(run.config)
  m.synthetic = M.synthetic_model(run.config)
  if run.finished and run.created then m.duration_s = run.finished - run.created end
  for v, n in pairs(assert(db:verdicts(run.id))) do
    m.verdicts[#m.verdicts + 1] = {verdict = v, n = n}
  end
  table.sort(m.verdicts, function(a, b)
    if a.n ~= b.n then return a.n > b.n end
    return a.verdict < b.verdict
  end)
  m.llm = {calls = run.llm_calls or 0, input_tokens = run.input_tokens or 0,
           output_tokens = run.output_tokens or 0, cost = run.cost or 0}

  for _, c in ipairs(assert(db:candidates(run.id))) do
    c.knobs = decode(c.knobs)
    c.children = {}
    m.candidates[#m.candidates + 1] = c
    m.by_id[c.id] = c
  end
  for _, c in ipairs(m.candidates) do
    local p = c.parent and m.by_id[c.parent]
    if p then p.children[#p.children + 1] = c.id end
  end

  -- tokens spent by the time of each evaluation: LLM calls made before it
  local calls = db.llm_calls and assert(db:llm_calls(run.id)) or {}
  table.sort(calls, function(a, b) return (a.created or 0) < (b.created or 0) end)
  local ci, spent = 1, 0
  local best_so_far
  for _, e in ipairs(assert(db:evaluations{run = run.id})) do
    e.result = decode(e.result) or {}
    e.fingerprint = decode(e.fingerprint) or {}
    while calls[ci] and (calls[ci].created or 0) <= (e.created or math.huge) do
      spent = spent + (calls[ci].input_tokens or 0) + (calls[ci].output_tokens or 0)
      ci = ci + 1
    end
    e.tokens = spent
    local bench = e.result.bench or {}
    e.roofline_pct, e.gbps, e.ref_median_ms = bench.roofline_pct, bench.gbps, bench.ref_median_ms
    e.message = e.result.message
    if e.ok and e.speedup and (not best_so_far or e.speedup > best_so_far) then
      best_so_far = e.speedup
    end
    e.best_so_far = best_so_far
    m.evals[#m.evals + 1] = e
    local c = m.by_id[e.candidate]
    if c then -- the candidate's evaluation to show: its fastest ok one, else its last
      local cur = c.eval
      if not cur or not cur.ok or (e.ok and (e.speedup or 0) > (cur.speedup or 0)) then
        c.eval = e
      end
    end
  end

  -- profiles (ctx:profile, docs/profile.md) are journal entries: {ids} -> {profiles}
  m.profiles = {}
  if db.journal then
    for _, kind, req, resp in db:journal(run.id) do
      if kind == "profile" then
        local q, a = decode(req) or {}, decode(resp) or {}
        for i, id in ipairs(q.ids or {}) do
          local p = (a.profiles or {})[i]
          if type(p) == "table" then m.profiles[id] = p end
        end
      end
    end
  end

  local best = db:best(run.id)
  if best then
    for _, e in ipairs(m.evals) do if e.id == best.id then m.best = e end end
    m.best.candidate_row = m.by_id[best.candidate]
    m.lineage = M.lineage(m.by_id, best.candidate)
  end
  return m
end

local function fmt_num(v, fmt, unit)
  if type(v) ~= "number" then return "-" end
  return fmt:format(v) .. (unit or "")
end
M.fmt_num = fmt_num

-- "69.8k", "1.20M"
function M.fmt_tokens(n)
  if n >= 1e6 then return ("%.2fM"):format(n / 1e6) end
  if n >= 1e4 then return ("%.1fk"):format(n / 1e3) end
  return tostring(math.tointeger(n) or n)
end

function M.fmt_duration(s)
  if not s then return "still running or not finished" end
  if s < 60 then return ("%.1f s"):format(s) end
  if s < 3600 then return ("%dm %02ds"):format(s // 60, math.floor(s % 60)) end
  return ("%dh %02dm"):format(s // 3600, math.floor(s % 3600 / 60))
end

-- fingerprint_line(e): where and how an evaluation was measured, one line.
function M.fingerprint_line(e)
  local fp, bench = e.fingerprint or {}, (e.result or {}).bench or {}
  local dev = fp.device or ((e.result or {}).device or {}).name or "?"
  local cc = fp.cc or ((e.result or {}).device or {}).cc
  local parts = {dev}
  if type(cc) == "table" then parts[#parts + 1] = ("sm_%s%s"):format(cc[1], cc[2]) end
  local rdev = (e.result or {}).device or {}
  if rdev.gpu then -- which GPU of a --gpus run measured it
    parts[#parts + 1] = ("gpu %s%s"):format(rdev.gpu, rdev.pci_bus and (" (" .. rdev.pci_bus .. ")")
                                                       or "")
  end
  if fp.driver then parts[#parts + 1] = "driver " .. tostring(fp.driver) end
  local clock = bench.sm_clock_mhz or fp.sm_clock_mhz
  if clock then parts[#parts + 1] = ("SM %s MHz"):format(clock) end
  local temp = bench.temp_c or fp.temp_c
  if temp then parts[#parts + 1] = ("%s C"):format(temp) end
  if fp.kevo_commit then parts[#parts + 1] = "kevo " .. tostring(fp.kevo_commit) end
  return table.concat(parts, ", ")
end

function M.lineage_line(chain)
  local parts = {}
  for _, c in ipairs(chain) do
    local s = c.eval and c.eval.ok and c.eval.speedup
    parts[#parts + 1] = ("#%d %s %s"):format(c.id, c.origin or "?", s and ("%.2fx"):format(s) or
      (c.eval and c.eval.verdict or "unevaluated"))
  end
  return table.concat(parts, " -> ")
end

-- text(m): the terminal summary.
function M.text(m)
  local r, out = m.run, {}
  local function add(fmt, ...) out[#out + 1] = fmt:format(...) end
  add("run %d: %s with %s (%s), %s", r.id, r.recipe or "?", r.strategy or "?", r.status or "?",
      M.fmt_duration(m.duration_s))
  add("  recipe      %s%s", r.recipe_path or "-",
    r.recipe_hash and (" (sha256 %s)"):format(r.recipe_hash:sub(1, 12)) or "")
  if m.synthetic then add("  %s", M.synthetic_line(m.synthetic)) end
  add("  kevo        %s (%s) on %s", r.kevo_version or "?", r.kevo_commit or "?", r.host or "?")
  local vs = {}
  for _, v in ipairs(m.verdicts) do vs[#vs + 1] = ("%s %d"):format(v.verdict, v.n) end
  add("  evaluations %d of %d candidates: %s", #m.evals, #m.candidates,
    #vs > 0 and table.concat(vs, ", ") or "none")
  add("  LLM         %d calls, %s tokens in, %s out, cost %.4f", m.llm.calls,
    M.fmt_tokens(m.llm.input_tokens),
      M.fmt_tokens(m.llm.output_tokens), m.llm.cost)
  local b = m.best
  if not b then
    add("no verified kernel: no candidate of this run passed verification")
    return table.concat(out, "\n") .. "\n"
  end
  local c = b.candidate_row or {}
  add("best: candidate %d (%s, %s), %s over the reference%s", b.candidate, c.origin or "?",
    c.lang or "?",
      fmt_num(b.speedup, "%.2fx"), m.synthetic and " (synthetic)" or "")
  add("  median      %s (reference %s)", fmt_num(b.median_ms, "%.4f ms"),
    fmt_num(b.ref_median_ms, "%.4f ms"))
  add("  roofline    %s, %s", fmt_num(b.roofline_pct, "%.1f%%"), fmt_num(b.gbps, "%.0f GB/s"))
  if c.knobs and next(c.knobs) then add("  knobs       %s", json.encode(c.knobs)) end
  if m.synthetic then
    add("  computed    by the model evaluator %s, not measured", m.synthetic)
  else
    add("  measured    %s", M.fingerprint_line(b))
  end
  local v = (b.result or {}).verify or {}
  if v.held_out and #v.held_out > 0 then
    add("  verified    on held-out shapes %s (drawn for that evaluation), %d stress trials, seed "
      .. "%s",
        table.concat(v.held_out, " "), v.stress_trials or 0, tostring(v.seed or "given"))
  end
  for _, w in ipairs((b.result or {}).warnings or {}) do add("  warning     %s", w) end
  add("  lineage     %s", M.lineage_line(m.lineage))
  M.profile_lines(m, add)
  return table.concat(out, "\n") .. "\n"
end

-- The figures of a profile summary (docs/profile.md) a report shows, in order: key, the short
-- label of the terminal, format, the long label of the HTML page; the page shows them all, the
-- terminal those marked short.
local PROFILE_FIGS = {
  {"time_ms", "kernel ms", "%.4f", "kernel time (ms, under the profiler)", short = true},
  {"dram_pct", "DRAM %", "%.1f", "DRAM throughput (% of peak)", short = true},
  {"dram_bytes", "DRAM MB", "%.1f", "DRAM bytes moved (MB)", scale = 1e-6},
  {"l2_hit_pct", "L2 hit %", "%.1f", "L2 hit rate (%)", short = true},
  {"sm_pct", "SM %", "%.1f", "SM throughput (% of peak)", short = true},
  {"occupancy_pct", "occupancy %", "%.1f", "achieved occupancy (%)", short = true},
  {"theoretical_pct", "theor. occ. %", "%.1f", "theoretical occupancy (%)"},
  {"registers", "registers", "%d", "registers per thread", short = true},
  {"waves", "waves", "%.2f", "waves per SM"},
  {"bank_conflict_pct", "bank confl. %", "%.1f", "shared-memory bank conflicts (% of wavefronts)",
   short = true},
  {"ld_efficiency_pct", "load eff. %", "%.1f", "global load: bytes used per sector (%)",
   short = true},
  {"st_efficiency_pct", "store eff. %", "%.1f", "global store: bytes used per sector (%)"},
  {"threads_per_inst", "threads/inst", "%.1f", "active threads per instruction (of 32)"},
  {"tensor_pct", "tensor %", "%.1f", "tensor cores busy (% of cycles)", short = true},
  {"pipe_pct", "pipe %", "%.1f", "busiest other pipe: FMA, ALU, FP64, XU or LSU (% of peak)"},
  {"issue_pct", "issue %", "%.1f", "issue slots busy (%)"},
}
M.PROFILE_FIGS = PROFILE_FIGS

-- profile_value(summary, fig): the figure as text, or nil when the summary lacks it.
function M.profile_value(s, f)
  local v = type(s) == "table" and s[f[1]] or nil
  if type(v) ~= "number" then return nil end
  v = v * (f.scale or 1)
  return f[3] == "%d" and tostring(math.floor(v)) or f[3]:format(v)
end

-- profile_lines(m, add): each profiled candidate's figures beside its timing, against the
-- reference and its parent (when the parent was profiled too), and its diagnosis' first line.
function M.profile_lines(m, add)
  local ids = {}
  for id in pairs(m.profiles or {}) do ids[#ids + 1] = id end
  if #ids == 0 then return end
  table.sort(ids)
  add("profiles    %d candidate%s profiled (Nsight Compute)", #ids, #ids == 1 and "" or "s")
  for _, id in ipairs(ids) do
    local p, c = m.profiles[id], m.by_id[id] or {}
    local e = c.eval or {}
    add("  #%d %s, %s", id, fmt_num(e.speedup, "%.2fx"), fmt_num(e.median_ms, "%.4f ms"))
    if not p.ok then
      add("      no profile: %s", tostring(p.error or p.reason))
    else
      local parent = c.parent and m.profiles[c.parent]
      local cols = {{"candidate", p.candidate or {}}, {"reference", p.reference}}
      if parent and parent.ok then cols[#cols + 1] = {"parent #" .. c.parent, parent.candidate} end
      local head = {("      %-14s"):format("")}
      for _, col in ipairs(cols) do
        if col[2] then head[#head + 1] = ("%12s"):format(col[1]) end
      end
      add("%s", table.concat(head))
      for _, f in ipairs(PROFILE_FIGS) do
        local row, any = {("      %-14s"):format(f[2])}, false
        for _, col in ipairs(cols) do
          if col[2] then
            local v = M.profile_value(col[2], f)
            any = any or v ~= nil
            row[#row + 1] = ("%12s"):format(v or "-")
          end
        end
        if any and f.short then add("%s", table.concat(row)) end
      end
      local d = (p.diagnosis or {})[1]
      if d then add("      1. %s", tostring(d.text)) end
    end
  end
end

-- summary(m): the JSON view (what --json prints).
function M.summary(m)
  local r = m.run
  local s = {
    run = {id = r.id, recipe = r.recipe, recipe_path = r.recipe_path, recipe_hash = r.recipe_hash,
           strategy = r.strategy, status = r.status, created = r.created, finished = r.finished,
           duration_s = m.duration_s, seed = r.seed, config = r.config,
           kevo_version = r.kevo_version,
           kevo_commit = r.kevo_commit, host = r.host},
    candidates = #m.candidates, evaluations = #m.evals, synthetic = m.synthetic,
    profiles = {},
    verdicts = {}, llm = m.llm, lineage = json.array(),
  }
  for _, v in ipairs(m.verdicts) do s.verdicts[v.verdict] = v.n end
  for id, p in pairs(m.profiles or {}) do s.profiles[tostring(id)] = p end
  local b = m.best
  if b then
    local c = b.candidate_row or {}
    s.best =
      {candidate = b.candidate, evaluation = b.id, origin = c.origin, lang = c.lang,
      knobs = c.knobs,
              speedup = b.speedup, median_ms = b.median_ms, ref_median_ms = b.ref_median_ms,
              roofline_pct = b.roofline_pct, gbps = b.gbps, fingerprint = b.fingerprint,
              source_hash = c.source_hash,
              held_out = ((b.result or {}).verify or {}).held_out or json.array(),
              stress_trials = ((b.result or {}).verify or {}).stress_trials,
              warnings = (b.result or {}).warnings or json.array()}
    for _, l in ipairs(m.lineage) do
      s.lineage[#s.lineage + 1] =
        {candidate = l.id, origin = l.origin, verdict = l.eval and l.eval.verdict,
                                   speedup = l.eval and l.eval.ok and l.eval.speedup or nil}
    end
  end
  return s
end

local USAGE = "usage: kevo report RUN|last [--db PATH] [--html FILE] [--json]"

-- parse(args): {run=, db=, html=, json=} or nil, message.
local function parse(args)
  local o, i = {}, 1
  while i <= #args do
    local a = args[i]
    if a == "--json" then o.json = true
    elseif a == "--db" or a == "--html" then
      if not args[i + 1] then return nil, a .. " needs a value" end
      o[a:sub(3)] = args[i + 1]
      i = i + 1
    elseif a:sub(1, 2) == "--" then return nil, ("unknown option '%s'"):format(a)
    elseif o.run then return nil, ("unexpected argument '%s'"):format(a)
    else o.run = a end
    i = i + 1
  end
  if not o.run then return nil, "which run? (an id, or last)" end
  return o
end

local function fail(code, msg)
  io.stderr:write("kevo report: ", msg, "\n")
  return code
end

-- suite_main(db, row, o): kevo report on a suite (kevo.report.suite): its table, --json,
-- --html FILE.
function M.suite_main(db, row, o)
  local suite = require "kevo.report.suite"
  local m = suite.gather(db, row)
  db:close()
  if o.html then
    local page = suite.html(m)
    local f, ferr = io.open(o.html, "wb")
    if not f then return fail(1, "cannot write the page: " .. ferr) end
    f:write(page)
    f:close()
  end
  if o.json then
    print(json.encode(suite.summary(m), {pretty = true}))
  else
    io.write(suite.text(m))
    if o.html then io.write(("page: %s (self-contained)\n"):format(o.html)) end
  end
  return 0
end

-- main(args): `kevo report`; returns the exit code (0 ok, 1 unreadable archive or write
-- failure, 2 bad usage, no archive, unknown run).
function M.main(args)
  local o, why = parse(args)
  if not o then return fail(2, why .. "\n" .. USAGE) end
  local path = o.db or archive.default_path()
  local db, msg, code = M.open(path)
  if not db then return fail(code, msg) end
  local run, err = M.find_run(db, o.run)
  if not run then db:close(); return fail(2, err) end
  if run.strategy == "suite" then return M.suite_main(db, run, o) end
  local m = M.gather(db, run)
  db:close()
  local page
  if o.html then
    page = require("kevo.report.html").render(m)
    local f, ferr = io.open(o.html, "wb")
    if not f then return fail(1, "cannot write the page: " .. ferr) end
    local ok, werr = f:write(page)
    f:close()
    if not ok then return fail(1, "cannot write the page: " .. tostring(werr)) end
  end
  if o.json then
    print(json.encode(M.summary(m), {pretty = true}))
  else
    io.write(M.text(m))
    if page then io.write(("page: %s (%d bytes, self-contained)\n"):format(o.html, #page)) end
  end
  return 0
end

return M
