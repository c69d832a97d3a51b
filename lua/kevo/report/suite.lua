-- kevo.report.suite: what a suite found (kevo suite; kevo report SUITE), read from the archive.
--
--   local m = suite.gather(db, row)  -- row: the suite's runs row (strategy "suite")
--   suite.text(m), suite.summary(m) (the JSON), suite.html(m) (one self-contained page)
--
-- One line per problem: its run, status, evaluations and verified ones, the best verified
-- speed-up over the recipe's reference, over PyTorch eager and torch.compile where the
-- reference is a PyTorch problem (both timed on the same GPU in the same session), its % of
-- roofline, and its verdict counts. Then the field's summary figures:
--   fast_p (p = 0, 1, 1.5, 2): the share of problems with a verified kernel at least p times
--     faster than the baseline (p = 0: any verified kernel). Against the reference over every
--     problem; against eager and torch.compile over the problems with a PyTorch reference (a
--     problem whose baseline could not be timed counts as not fast).
--   the geometric mean speed-up against each baseline, over the problems with a verified kernel
--     and a timed baseline (how many is said).
local json = require "kevo.json"
local report = require "kevo.report"

local M = {}

M.PS = {0, 1, 1.5, 2}

local function decode(text)
  if type(text) ~= "string" then return text end
  local v = json.decode(text)
  return type(v) == "table" and v or nil
end

-- The problem's line from its run (report.gather's model of it).
local function problem_line(db, prob, i, f, run_row)
  local p = {index = i, path = prob.path, kind = prob.kind, status = "not run", evals = 0,
             verified = 0, verdicts = {}}
  if f then p.error, p.reference = f.error, f.reference end
  if not run_row then
    if f then p.status = f.status or "failed" end
    return p
  end
  local m = report.gather(db, run_row)
  p.run, p.name, p.status = run_row.id, run_row.recipe, run_row.status
  p.evals = #m.evals
  for _, v in ipairs(m.verdicts) do
    p.verdicts[#p.verdicts + 1] = {verdict = v.verdict, n = v.n}
    if v.verdict == "ok" then p.verified = v.n end
  end
  for _, e in ipairs(m.evals) do -- a PyTorch reference shows in its baselines
    local b = (e.result or {}).bench or {}
    if b.eager_ms or b.baseline_error then p.reference = p.reference or "torch" end
  end
  local best = m.best
  if best then
    local b = (best.result or {}).bench or {}
    p.speedup = best.speedup
    p.median_ms, p.ref_median_ms = b.median_ms, b.ref_median_ms
    p.roofline_pct = b.roofline_pct
    p.gpu = (best.result.device or {}).name
    if b.eager_ms and b.median_ms and b.median_ms > 0 then
      p.vs_eager = b.eager_ms / b.median_ms
      p.eager_ms = b.eager_ms
    end
    if b.compiled_ms and b.median_ms and b.median_ms > 0 then
      p.vs_compile = b.compiled_ms / b.median_ms
      p.compiled_ms = b.compiled_ms
    end
    p.candidate = best.candidate
  end
  return p
end

local function geomean(xs)
  if #xs == 0 then return nil end
  local s = 0
  for _, x in ipairs(xs) do s = s + math.log(x) end
  return math.exp(s / #xs)
end

-- fast_p and the geometric mean against one baseline: key is the problem field holding the
-- speed-up; over the problems `counts(p)` says count.
local function figures(problems, key, counts)
  local fast, of, speeds = {}, 0, {}
  for _, p in ipairs(problems) do
    if counts(p) then
      of = of + 1
      if p[key] then speeds[#speeds + 1] = p[key] end
    end
  end
  for i, q in ipairs(M.PS) do
    local n = 0
    for _, p in ipairs(problems) do
      if counts(p) and p[key] and (q == 0 or p[key] >= q) then n = n + 1 end
    end
    fast[i] = {p = q, n = n, of = of, share = of > 0 and n / of or nil}
  end
  return {fast = fast, of = of, geomean = geomean(speeds), geomean_of = #speeds}
end

-- gather(db, row): {suite = {id, status, created, finished, problems = n, config},
-- problems = {line, ...}, summary = {fast = {ref, eager, compile}, geomean = {...}}}.
function M.gather(db, row)
  local config = decode(row.config) or {}
  local finished = {}
  for _, kind, req, resp in db:journal(row.id) do
    if kind == "problem" then
      local q, a = decode(req), decode(resp)
      if q and a then finished[q.index] = a end
    end
  end
  local by_index = {}
  for _, r in ipairs(assert(db:runs())) do
    local c = decode(r.config)
    local s = c and type(c.suite) == "table" and c.suite
    if s and s.id == row.id then by_index[s.index] = r end
  end
  local m = {suite = {id = row.id, status = row.status, created = row.created,
                      finished = row.finished, config = config},
             problems = {}}
  for i, prob in ipairs(config.problems or {}) do
    local f = finished[i]
    local r = f and f.run and db:run(f.run) or by_index[i]
    m.problems[i] = problem_line(db, prob, i, f, r)
  end
  m.suite.problems = #m.problems
  local all = function() return true end
  local torch = function(p) return p.reference == "torch" end
  local ref = figures(m.problems, "speedup", all)
  local eager = figures(m.problems, "vs_eager", torch)
  local compile = figures(m.problems, "vs_compile", torch)
  m.summary = {fast = {ref = ref.fast, eager = eager.fast, compile = compile.fast},
               geomean = {ref = ref.geomean, ref_of = ref.geomean_of,
                          eager = eager.geomean, eager_of = eager.geomean_of,
                          compile = compile.geomean, compile_of = compile.geomean_of},
               torch_problems = eager.of}
  return m
end

local function x(v) return type(v) == "number" and ("%.2fx"):format(v) or "-" end

local function verdict_text(p)
  local parts = {}
  for _, v in ipairs(p.verdicts) do parts[#parts + 1] = v.n .. " " .. v.verdict end
  return #parts > 0 and table.concat(parts, ", ") or (p.error and "error" or "-")
end

local function fast_text(f)
  if f.of == 0 then return "-" end
  return ("%d/%d (%.0f%%)"):format(f.n, f.of, 100 * f.n / f.of)
end

-- text(m): the terminal table and the summary figures.
function M.text(m)
  local out = {}
  local function add(fmt, ...) out[#out + 1] = fmt:format(...) end
  add("suite %d (%s): %d problems", m.suite.id, m.suite.status, m.suite.problems)
  add("%-3s %-26s %5s %-7s %6s %5s %8s %8s %8s %8s  %s", "#", "problem", "run", "status",
      "evals", "ok", "vs ref", "eager", "compile", "roofline", "verdicts")
  for _, p in ipairs(m.problems) do
    local name = p.name or p.path:match("([^/]+)$") or p.path
    if #name > 26 then name = name:sub(1, 25) .. "~" end
    add("%-3d %-26s %5s %-7s %6d %5d %8s %8s %8s %8s  %s", p.index, name,
        p.run and tostring(p.run) or "-", p.status, p.evals, p.verified, x(p.speedup),
        x(p.vs_eager), x(p.vs_compile),
        p.roofline_pct and ("%.0f%%"):format(p.roofline_pct) or "-", verdict_text(p))
    if p.error then add("    %s", (tostring(p.error):gsub("\n.*", ""))) end
  end
  local s = m.summary
  local head = {}
  for _, q in ipairs(M.PS) do head[#head + 1] = ("fast_%s"):format(q) end
  add("%-22s %s", "", table.concat((function()
    local t = {}
    for i, h in ipairs(head) do t[i] = ("%-14s"):format(h) end
    return t
  end)(), " "))
  local function row(label, fast)
    local t = {}
    for i, f in ipairs(fast) do t[i] = ("%-14s"):format(fast_text(f)) end
    add("%-22s %s", label, table.concat(t, " "))
  end
  row("vs the reference", s.fast.ref)
  row("vs PyTorch eager", s.fast.eager)
  row("vs torch.compile", s.fast.compile)
  local g = s.geomean
  add("geometric mean speed-up: %s vs the reference (%d problems), %s vs eager (%d), " ..
      "%s vs torch.compile (%d)", x(g.ref), g.ref_of, x(g.eager), g.eager_of, x(g.compile),
      g.compile_of)
  if s.torch_problems == 0 then
    add("(no problem has a PyTorch reference: eager and torch.compile figures need " ..
        "KernelBench problems)")
  end
  return table.concat(out, "\n") .. "\n"
end

-- summary(m): the JSON view (kevo suite --json FILE, kevo report SUITE --json).
function M.summary(m)
  local problems = json.array()
  for i, p in ipairs(m.problems) do
    local v = {}
    for _, e in ipairs(p.verdicts) do v[e.verdict] = e.n end
    problems[i] = {index = p.index, path = p.path, kind = p.kind, name = p.name, run = p.run,
                   status = p.status, evaluations = p.evals, verified = p.verified,
                   speedup = p.speedup, vs_eager = p.vs_eager, vs_compile = p.vs_compile,
                   median_ms = p.median_ms, ref_median_ms = p.ref_median_ms,
                   eager_ms = p.eager_ms, compiled_ms = p.compiled_ms,
                   roofline_pct = p.roofline_pct, reference = p.reference, gpu = p.gpu,
                   candidate = p.candidate, verdicts = v, error = p.error}
  end
  local function fast(list)
    local t = {}
    for _, f in ipairs(list) do
      t["fast_" .. tostring(f.p)] = {n = f.n, of = f.of, share = f.share}
    end
    return t
  end
  local s = m.summary
  return {suite = {id = m.suite.id, status = m.suite.status, created = m.suite.created,
                   finished = m.suite.finished, problems = m.suite.problems},
          problems = problems,
          fast_p = {reference = fast(s.fast.ref), eager = fast(s.fast.eager),
                    compile = fast(s.fast.compile)},
          geomean = s.geomean}
end

-- html(m): one self-contained page (the same table and figures).
function M.html(m)
  local html = require "kevo.report.html"
  local esc = html.esc
  local assets = require "kevo.report.assets"
  local rows = {}
  for _, p in ipairs(m.problems) do
    rows[#rows + 1] = ("<tr><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%d</td>" ..
                       "<td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>"):format(
      p.index, esc(p.name or p.path), esc(p.run or "-"), esc(p.status), p.evals, p.verified,
      esc(x(p.speedup)), esc(x(p.vs_eager)), esc(x(p.vs_compile)),
      esc(p.roofline_pct and ("%.0f%%"):format(p.roofline_pct) or "-"), esc(verdict_text(p)))
  end
  local fast_rows = {}
  for _, r in ipairs{{"vs the reference", m.summary.fast.ref},
                     {"vs PyTorch eager", m.summary.fast.eager},
                     {"vs torch.compile", m.summary.fast.compile}} do
    local cells = {}
    for i, f in ipairs(r[2]) do cells[i] = "<td>" .. esc(fast_text(f)) .. "</td>" end
    fast_rows[#fast_rows + 1] = "<tr><th>" .. esc(r[1]) .. "</th>" .. table.concat(cells) ..
                                "</tr>"
  end
  local g = m.summary.geomean
  local title = ("kevo suite %d"):format(m.suite.id)
  return table.concat({
    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>", esc(title),
    "</title>\n<style>", assets.css, "</style>\n</head><body>\n<main>\n<h1>", esc(title), " (",
    esc(m.suite.status), ", ", m.suite.problems, " problems)</h1>\n",
    "<section><h2>Problems</h2><table><thead><tr><th>#</th><th>problem</th><th>run</th>",
    "<th>status</th><th>evaluations</th><th>verified</th><th>vs reference</th>",
    "<th>vs eager</th><th>vs torch.compile</th><th>roofline</th><th>verdicts</th></tr></thead>",
    "<tbody>", table.concat(rows, "\n"), "</tbody></table></section>\n",
    "<section><h2>fast_p</h2><table><thead><tr><th></th><th>fast_0</th><th>fast_1</th>",
    "<th>fast_1.5</th><th>fast_2</th></tr></thead><tbody>", table.concat(fast_rows, "\n"),
    "</tbody></table>\n<p>Geometric mean speed-up: ", esc(x(g.ref)), " vs the reference (",
    g.ref_of, " problems), ", esc(x(g.eager)), " vs eager (", g.eager_of, "), ",
    esc(x(g.compile)), " vs torch.compile (", g.compile_of, ").</p></section>\n",
    "<p>Each problem's run: kevo report RUN.</p>\n</main></body></html>\n"})
end

return M
