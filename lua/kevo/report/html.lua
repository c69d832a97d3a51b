-- kevo.report.html: one self-contained HTML page for a run (no external URL: inline CSS, inline
-- JS, SVG charts drawn by the page's own script). render(model) takes kevo.report.gather's model.
--
-- Everything from the archive is untrusted (sources, messages, knobs, even verdict names): text
-- goes through esc(), class names through cls(), and the chart data rides in a JSON block whose
-- '<', '>' and '&' are \u-escaped, so no archive byte can close a tag or open a script.
-- The script marks what it drew: each chart's svg gets data-points="N" (points drawn), the page
-- data-rendered="1", and any script error lands in #js-errors (data-errors="N") for the tests.
local json = require "kevo.json"
local report = require "kevo.report"
local assets = require "kevo.report.assets"

local M = {}

local ESC = {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;",
             ["\0"] = "\u{FFFD}"}

-- esc(v): text safe inside an element or a quoted attribute.
local function esc(v)
  if v == nil then return "" end
  return (tostring(v):gsub("[&<>\"'%z]", ESC))
end
M.esc = esc

-- cls(v): a class-name fragment: lower-case letters, digits and _ only.
local function cls(v)
  return (tostring(v or "none"):lower():gsub("[^%w_]", "_"))
end

local function num(v, fmt)
  if type(v) ~= "number" or v ~= v then return "" end
  return fmt:format(v)
end

-- json_block(v): JSON for a <script type="application/json"> element.
local function json_block(v)
  return (json.encode(v):gsub("[<>&]", {["<"] = "\\u003c", [">"] = "\\u003e", ["&"] = "\\u0026"}))
end

local function verdict_badge(v)
  return ('<span class="badge v-%s">%s</span>'):format(cls(v), esc(v or "unevaluated"))
end

local function source_block(src)
  local out, n = {}, 0
  src = src or ""
  for line in (src:sub(-1) == "\n" and src or src .. "\n"):gmatch("(.-)\n") do
    n = n + 1
    out[#out + 1] = ('<tr><td class="ln">%d</td><td class="code">%s</td></tr>'):format(n, esc(line))
  end
  return ('<table class="src" data-lines="%d"><tbody>%s</tbody></table>'):format(n,
    table.concat(out, "\n"))
end

-- lineage_tree(m): nested lists from the roots, the best one's chain marked.
local function lineage_tree(m)
  local on_path = {}
  for _, c in ipairs(m.lineage or {}) do on_path[c.id] = true end
  local best = m.best and m.best.candidate
  local out, count = {}, 0
  local function node(c, depth)
    count = count + 1
    local e = c.eval
    local speed = e and e.ok and e.speedup and ("%.2fx"):format(e.speedup) or ""
    out[#out + 1] = (
      '<li class="%s%s" data-candidate="%d"><span class="node v-%s">#%d</span> %s %s <span '
      .. 'class="sp">%s</span>')
      :format(on_path[c.id] and "path" or "", c.id == best and " best" or "", c.id,
              cls(e and e.verdict), c.id, esc(c.origin), verdict_badge(e and e.verdict), speed)
    if #c.children > 0 then
      if depth > 200 then out[#out + 1] = "<ul><li>...</li></ul>"
      else
        out[#out + 1] = "<ul>"
        for _, k in ipairs(c.children) do node(m.by_id[k], depth + 1) end
        out[#out + 1] = "</ul>"
      end
    end
    out[#out + 1] = "</li>"
  end
  out[#out + 1] = '<ul class="tree">'
  for _, c in ipairs(m.candidates) do
    if not (c.parent and m.by_id[c.parent]) then node(c, 0) end
  end
  out[#out + 1] = "</ul>"
  return table.concat(out, "\n"), count
end

-- What an evaluation was checked on beyond the recipe's shapes, and what the artifact scan found
-- (docs/worker.md): held-out shape labels, stress trials, warnings.
local function checks_of(e)
  local res = (e or {}).result or {}
  local v = type(res.verify) == "table" and res.verify or {}
  local held = type(v.held_out) == "table" and v.held_out or {}
  local warns = type(res.warnings) == "table" and res.warnings or {}
  return held, math.tointeger(v.stress_trials) or 0, warns, v.seed
end

local function list_cell(items)
  local out = {}
  for _, s in ipairs(items) do out[#out + 1] = esc(s) end
  return table.concat(out, "<br>")
end

-- profile_cell(p): the candidates table's profile cell: the first finding's kind, or why none.
local function profile_cell(p)
  if type(p) ~= "table" then return '<td class="prof"></td>' end
  local d = p.ok and (p.diagnosis or {})[1]
  local text = p.ok and (d and d.kind or "profiled") or ("none: " .. tostring(p.reason or "?"))
  return ('<td class="prof" title="%s">%s</td>'):format(esc(d and d.text or p.error or ""),
    esc(text))
end

-- profiles_section(m): each profiled candidate's hardware profile (ctx:profile, docs/profile.md)
-- beside its timing, in columns: the candidate, the reference, and its parent when the parent
-- was profiled too; then the ranked diagnosis. nil when no candidate was profiled.
local function profiles_section(m)
  local ids = {}
  for id in pairs(m.profiles or {}) do ids[#ids + 1] = id end
  if #ids == 0 then return nil end
  table.sort(ids)
  local out = {}
  for _, id in ipairs(ids) do
    local p, c = m.profiles[id], m.by_id[id] or {}
    local e = c.eval or {}
    out[#out + 1] = ('<div class="profile" data-profile="%d"><h3>Candidate #%d</h3>'):format(id,
      id)
    if not p.ok then
      out[#out + 1] = ('<p class="meta">No profile: %s.</p></div>'):format(
        esc(p.error or p.reason or "?"))
    else
      local ref_ms = (((e.result or {}).bench) or {}).ref_median_ms
      local cols = {{head = ("candidate #%d"):format(id), s = p.candidate or {},
                     speedup = e.ok and e.speedup, ms = e.median_ms}}
      if type(p.reference) == "table" then
        cols[#cols + 1] = {head = "reference", s = p.reference, speedup = ref_ms and 1, ms = ref_ms}
      end
      local pp, note = c.parent and m.profiles[c.parent], ""
      if pp and pp.ok then
        local pe = (m.by_id[c.parent] or {}).eval or {}
        cols[#cols + 1] = {head = ("parent #%d"):format(c.parent), s = pp.candidate or {},
                           speedup = pe.ok and pe.speedup, ms = pe.median_ms}
      elseif c.parent then
        note = (" Its parent #%d was not profiled."):format(c.parent)
      end
      out[#out + 1] = ('<p class="meta">Nsight Compute, %s, clocks as they are.%s</p>'):format(
        esc(report.fmt_num(p.ms and p.ms / 1000, "%.1f s")), esc(note))
      local head = {"<th></th>"}
      for _, col in ipairs(cols) do head[#head + 1] = "<th>" .. esc(col.head) .. "</th>" end
      local rows = {}
      local function row(label, cells)
        rows[#rows + 1] = "<tr><th>" .. esc(label) .. "</th>" .. table.concat(cells) .. "</tr>"
      end
      local sp, ms = {}, {}
      for i, col in ipairs(cols) do
        sp[i] = ('<td class="n">%s</td>'):format(num(col.speedup, "%.2fx"))
        ms[i] = ('<td class="n">%s</td>'):format(num(col.ms, "%.4f"))
      end
      row("speed-up (timed)", sp)
      row("median time (ms, timed)", ms)
      for _, f in ipairs(report.PROFILE_FIGS) do
        local cells, any = {}, false
        for i, col in ipairs(cols) do
          local v = report.profile_value(col.s, f)
          any = any or v ~= nil
          cells[i] = ('<td class="n">%s</td>'):format(esc(v or "-"))
        end
        if any then row(f[4], cells) end
      end
      local lim = type(p.candidate) == "table" and p.candidate.limiter
      if lim then
        local cells = {}
        for i, col in ipairs(cols) do cells[i] = "<td>" .. esc(col.s.limiter or "-") .. "</td>" end
        row("occupancy limiter", cells)
      end
      local diag = {}
      for _, d in ipairs(p.diagnosis or {}) do
        diag[#diag + 1] = ('<li data-kind="%s">%s</li>'):format(cls(d.kind), esc(d.text))
      end
      out[#out + 1] = ('<table class="grid prof" data-cols="%d"><thead><tr>%s</tr></thead>'
        .. "<tbody>%s</tbody></table>"):format(#cols, table.concat(head), table.concat(rows))
      out[#out + 1] = ('<ol class="diagnosis">%s</ol></div>'):format(table.concat(diag))
    end
  end
  return ('<section id="profiles"><h2>Profiles</h2><p class="meta">%d candidate%s profiled: the '
    .. "hardware's own view (docs/profile.md), beside the timed figures, against the reference "
    .. "and the parent, with the diagnosis ranked most important first.</p>%s</section>")
    :format(#ids, #ids == 1 and "" or "s", table.concat(out, "\n"))
end

local function candidate_table(m)
  local rows = {}
  for _, c in ipairs(m.candidates) do
    local e = c.eval or {}
    local held, _, warns = checks_of(e)
    rows[#rows + 1] = table.concat{
      ('<tr class="%s">'):format(m.best and c.id == m.best.candidate and "best" or ""),
      ('<td data-v="%d">%d</td>'):format(c.id, c.id),
      ('<td data-v="%s">%s</td>'):format(c.parent or "", c.parent or ""),
      ("<td>%s</td>"):format(esc(c.origin)),
      ('<td data-v="%s">%s</td>'):format(esc(e.verdict or "~"), verdict_badge(e.verdict)),
      ("<td>%s</td>"):format(esc(e.stage)),
      ('<td class="n" data-v="%s">%s</td>'):format(num(e.ok and e.speedup, "%.6g"),
        num(e.ok and e.speedup, "%.2fx")),
      ('<td class="n" data-v="%s">%s</td>'):format(num(e.median_ms, "%.6g"),
        num(e.median_ms, "%.4f")),
      ('<td class="n" data-v="%s">%s</td>'):format(num(e.roofline_pct, "%.6g"),
        num(e.roofline_pct, "%.1f%%")),
      ('<td class="knobs">%s</td>'):format(
        esc(c.knobs and next(c.knobs) and json.encode(c.knobs) or "")),
      ('<td class="held">%s</td>'):format(list_cell(held)),
      ('<td class="warn" data-v="%d">%s</td>'):format(#warns, list_cell(warns)),
      ('<td class="msg">%s</td>'):format(esc(e.message)),
      profile_cell((m.profiles or {})[c.id]),
      "</tr>",
    }
  end
  return table.concat(rows, "\n"), #rows
end

-- fingerprints(m): the distinct measurement settings, with how many evaluations each covers.
local function fingerprints(m)
  local seen, list = {}, {}
  for _, e in ipairs(m.evals) do
    local fp, bench = e.fingerprint or {}, (e.result or {}).bench or {}
    local dev = (e.result or {}).device or {}
    local cc = type(fp.cc) == "table" and fp.cc or dev.cc
    local row = {
      device = fp.device or dev.name,
      cc = type(cc) == "table" and ("sm_%s%s"):format(cc[1], cc[2]) or nil,
      driver = fp.driver, sm_clock = bench.sm_clock_mhz or fp.sm_clock_mhz,
      mem_clock = fp.mem_clock_mhz,
      temp = bench.temp_c or fp.temp_c, commit = fp.kevo_commit,
    }
    local key = table.concat({tostring(row.device), tostring(row.cc), tostring(row.driver),
                              tostring(row.sm_clock), tostring(row.mem_clock), tostring(row.temp),
                              tostring(row.commit)}, "|")
    if not seen[key] then
      seen[key] = row
      row.n, row.first = 0, e.id
      list[#list + 1] = row
    end
    seen[key].n = seen[key].n + 1
  end
  local out = {}
  for _, r in ipairs(list) do
    out[#out + 1] = (
      "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td "
      .. "class=\"n\">%d</td></tr>")
      :format(esc(r.device or "-"), esc(r.cc or "-"), esc(r.driver or "-"),
        esc(r.sm_clock and (tostring(r.sm_clock) .. " MHz") or "-"),
              esc(r.mem_clock and (tostring(r.mem_clock) .. " MHz") or "-"),
              esc(r.temp and (tostring(r.temp) .. " C") or "-"),
              esc(r.commit or "-"), r.n)
  end
  return table.concat(out, "\n")
end

local function chart_data(m)
  local pts = {}
  for i, e in ipairs(m.evals) do
    pts[#pts + 1] = {i = i, id = e.id, c = e.candidate, v = e.verdict, ok = e.ok and true or false,
                     s = e.ok and e.speedup or nil, r = e.ok and e.roofline_pct or nil,
                     t = e.tokens}
  end
  return {evals = json.array(pts), best = m.best and m.best.id or nil,
          tokens = m.llm.input_tokens + m.llm.output_tokens}
end

local function card(label, value, sub)
  return (
    '<div class="card"><div class="label">%s</div><div class="value">%s</div><div '
    .. 'class="sub">%s</div></div>')
    :format(esc(label), esc(value), esc(sub or ""))
end

-- render(m): the page, as one string.
function M.render(m)
  local r, b = m.run, m.best
  local title = ("kevo run %d: %s"):format(r.id, r.recipe or "?")
  local body = {}
  local function add(s) body[#body + 1] = s end
  add((
    '<header><h1>%s</h1><p class="meta">%s with strategy <b>%s</b>, <span class="status '
    .. 's-%s">%s</span>, %s. '
       .. "Recipe <code>%s</code>%s. kevo %s (%s) on %s.</p></header>")
      :format(esc(title), esc(r.recipe), esc(r.strategy), cls(r.status), esc(r.status),
        esc(report.fmt_duration(m.duration_s)),
              esc(r.recipe_path or "-"),
              r.recipe_hash and (" sha256 <code>" .. esc(r.recipe_hash:sub(1, 16)) .. "</code>") or
              "",
              esc(r.kevo_version), esc(r.kevo_commit), esc(r.host)))
  if m.synthetic then
    add('<p class="synthetic">' .. esc(report.synthetic_line(m.synthetic)) .. "</p>")
  end
  local cards = {}
  if b then
    cards[#cards + 1] = card("speed-up", report.fmt_num(b.speedup, "%.2fx"),
                             m.synthetic and "over the reference (synthetic)" or
                               "over the reference")
    cards[#cards + 1] = card("median time", report.fmt_num(b.median_ms, "%.4f ms"),
                             "reference " .. report.fmt_num(b.ref_median_ms, "%.4f ms"))
    cards[#cards + 1] =
      card("roofline", report.fmt_num(b.roofline_pct, "%.1f%%"),
      report.fmt_num(b.gbps, "%.0f GB/s"))
  else
    cards[#cards + 1] = card("best", "none", "no candidate passed verification")
  end
  local vs = {}
  for _, v in ipairs(m.verdicts) do vs[#vs + 1] = ("%s %d"):format(v.verdict, v.n) end
  cards[#cards + 1] = card("evaluations", tostring(#m.evals), table.concat(vs, ", "))
  cards[#cards + 1] = card("tokens", report.fmt_tokens(m.llm.input_tokens + m.llm.output_tokens),
                           ("%d calls, cost %.4f"):format(m.llm.calls, m.llm.cost))
  add('<section class="cards">' .. table.concat(cards) .. "</section>")

  add('<section><h2>Progress</h2><div class="controls">metric: <button type="button" '
    .. 'data-metric="s" class="on">speed-up</button>'
      .. '<button type="button" data-metric="r">% of roofline</button></div><div class="charts">'
      .. '<figure><svg id="chart-evals" class="chart" viewBox="0 0 560 280" data-points="0" '
        .. 'role="img" aria-label="by evaluation"></svg>'
      .. "<figcaption>over evaluations</figcaption></figure>"
      .. '<figure><svg id="chart-tokens" class="chart" viewBox="0 0 560 280" data-points="0" '
        .. 'role="img" aria-label="by tokens"></svg>'
      .. "<figcaption>over LLM tokens spent</figcaption></figure></div>"
      .. '<p class="legend"><span class="dot ok"></span> verified evaluation <span '
        .. 'class="line"></span> best so far '
      .. '<span class="tick bad"></span> failed evaluation (at the bottom)</p></section>')

  if b then
    local c = b.candidate_row or {}
    local held, stress, warns, seed = checks_of(b)
    local checks = {}
    if #held > 0 or stress > 0 then
      checks[#checks + 1] = ('<p class="meta checks">Verified on held-out shapes <b>%s</b> '
        .. "(drawn for that evaluation, never shown to the model), %d stress trial%s, inputs' "
        .. "seed %s.</p>"):format(#held > 0 and esc(table.concat(held, ", ")) or "none",
          stress, stress == 1 and "" or "s", esc(tostring(seed or "given")))
    end
    if #warns > 0 then
      checks[#checks + 1] = '<ul class="warnings">'
      for _, w in ipairs(warns) do checks[#checks + 1] = "<li>warning: " .. esc(w) .. "</li>" end
      checks[#checks + 1] = "</ul>"
    end
    add((
      "<section><h2>Best kernel: candidate #%d</h2><p class=\"meta\">%s, %s, evaluation %d: %s, "
      .. "median %s, %s of roofline, %s. "
         .. "Knobs <code>%s</code>. Lineage: %s.</p><p class=\"meta\">%s</p>%s%s</section>")
        :format(b.candidate, esc(c.origin), esc(c.lang), b.id,
          esc(report.fmt_num(b.speedup, "%.2fx")),
                esc(report.fmt_num(b.median_ms, "%.4f ms")),
                esc(report.fmt_num(b.roofline_pct, "%.1f%%")),
                esc(report.fmt_num(b.gbps, "%.0f GB/s")),
                esc(c.knobs and json.encode(c.knobs) or "{}"),
                esc(report.lineage_line(m.lineage)),
                m.synthetic and ("<strong>Synthetic</strong>: computed by the model evaluator " ..
                  esc(m.synthetic)
                                 .. ", not measured on a GPU.")
                  or ("Measured on " .. esc(report.fingerprint_line(b)) .. "."),
                table.concat(checks), source_block(c.source)))
  end

  local tree, nodes = lineage_tree(m)
  add((
    '<section><h2>Lineage</h2><p class="meta">%d candidates; the best one\'s ancestors are '
    .. 'marked.</p>'
       .. '<div class="treebox" data-nodes="%d">%s</div></section>'):format(nodes, nodes, tree))

  local rows, nrows = candidate_table(m)
  add((
    '<section><h2>Candidates</h2><p class="meta">Click a column to sort.</p><table id="cands" '
    .. 'class="grid" data-rows="%d"><thead><tr>'
       .. '<th data-type="n">#</th><th '
         .. 'data-type="n">parent</th><th>origin</th><th>verdict</th><th>stage</th>'
       .. '<th data-type="n">speed-up</th><th data-type="n">median ms</th><th '
         .. 'data-type="n">roofline</th><th>knobs</th><th>held-out shapes</th>'
       .. '<th data-type="n">warnings</th><th>message</th><th>profile</th>'
       .. "</tr></thead><tbody>%s</tbody></table></section>"):format(nrows, rows))
  local profiles = profiles_section(m)
  if profiles then add(profiles) end

  add('<section><h2>Measurement fingerprints</h2><table '
    .. 'class="grid"><thead><tr><th>device</th><th>arch</th><th>driver</th>'
      .. '<th>SM clock</th><th>memory clock</th><th>temperature</th><th>kevo '
        .. 'commit</th><th>evaluations</th></tr></thead><tbody>'
      .. fingerprints(m) .. "</tbody></table></section>")

  add('<footer>Written by kevo report. Self-contained: no external resources. <span '
    .. 'id="js-errors" data-errors="0"></span></footer>')

  return table.concat{
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      .. "'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">",
    "<title>", esc(title), "</title>\n<style>", assets.css, "</style>\n",
    -- the error catcher comes first so it sees errors of the main script too
    "<script>", assets.errors_js, "</script>\n</head><body data-rendered=\"0\">\n",
    table.concat(body, "\n"),
    '\n<script type="application/json" id="kevo-data">', json_block(chart_data(m)), "</script>\n",
    "<script>", assets.main_js, "</script>\n</body></html>\n",
  }
end

return M
