-- kevo.report.assets: the CSS and JavaScript inlined into every report page. Constant text:
-- nothing from the archive is spliced in here (the data rides in the page's JSON block).
local M = {}

M.css = [[
:root { --fg:#1d2330; --muted:#667085; --line:#e4e7ec; --bg:#f7f8fa; --card:#fff; --accent:#2563eb;
  --ok:#16a34a; --bad:#dc2626; --warn:#d97706; --crash:#7f1d1d; --slow:#7c3aed; --odd:#0891b2; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px 48px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  color: var(--fg); background: var(--bg); }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 0 0 8px; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 16px 18px; margin: 16px 0; }
.meta { color: var(--muted); margin: 4px 0 10px; } code { font: 12px ui-monospace, "DejaVu Sans Mono", monospace; }
.cards { display: flex; gap: 12px; flex-wrap: wrap; background: none; border: 0; padding: 0; }
.card { flex: 1 1 150px; background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
.card .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .value { font-size: 26px; font-weight: 650; } .card .sub { color: var(--muted); font-size: 12px; }
.charts { display: flex; gap: 16px; flex-wrap: wrap; } figure { margin: 0; flex: 1 1 460px; }
figcaption { text-align: center; color: var(--muted); font-size: 12px; }
svg.chart { width: 100%; height: auto; background: #fcfcfd; border: 1px solid var(--line); border-radius: 6px; }
svg.chart .axis { stroke: #98a2b3; stroke-width: 1; } svg.chart .grid { stroke: #eef0f3; stroke-width: 1; }
svg.chart text { font-size: 10px; fill: #667085; } svg.chart .best { fill: none; stroke: var(--accent); stroke-width: 2; }
svg.chart .pt { fill: var(--ok); fill-opacity: .75; stroke: #fff; stroke-width: .8; }
svg.chart .pt.top { fill: var(--accent); fill-opacity: 1; } svg.chart .fail { stroke: var(--bad); stroke-width: 1.2; }
svg.chart .empty { font-size: 13px; }
.controls { margin-bottom: 8px; color: var(--muted); }
.controls button { font: inherit; border: 1px solid var(--line); background: #fff; border-radius: 5px; padding: 2px 10px; margin-left: 6px; cursor: pointer; }
.controls button.on { background: var(--accent); color: #fff; border-color: var(--accent); }
.legend { color: var(--muted); font-size: 12px; }
.legend .dot { display: inline-block; width: 9px; height: 9px; border-radius: 50%; background: var(--ok); }
.legend .line { display: inline-block; width: 18px; height: 2px; background: var(--accent); vertical-align: middle; margin-left: 10px; }
.legend .tick { display: inline-block; width: 2px; height: 10px; background: var(--bad); margin-left: 10px; }
table.src { border-collapse: collapse; width: 100%; font: 12px/1.5 ui-monospace, "DejaVu Sans Mono", monospace;
  background: #0f172a; color: #e2e8f0; border-radius: 6px; overflow: hidden; }
table.src td { padding: 0 10px; white-space: pre; vertical-align: top; }
table.src td.ln { color: #64748b; text-align: right; user-select: none; width: 1%; border-right: 1px solid #1e293b; }
.treebox { max-height: 520px; overflow: auto; font-size: 13px; }
.tree, .tree ul { list-style: none; margin: 0; padding-left: 14px; } .tree { padding-left: 0; }
.tree ul { border-left: 1px dashed #d0d5dd; margin-left: 6px; }
.tree li { margin: 1px 0; white-space: nowrap; } .tree li.path > .node { outline: 2px solid var(--accent); }
.tree li.best > .node { background: var(--accent); color: #fff; }
.node { display: inline-block; min-width: 34px; padding: 0 4px; border-radius: 4px; background: #f2f4f7; font-weight: 600; text-align: center; }
.sp { color: var(--ok); font-weight: 600; }
.badge { display: inline-block; padding: 0 6px; border-radius: 9px; font-size: 11px; background: #98a2b3; color: #fff; }
.v-ok { background: var(--ok); } .v-wrong, .v-input_modified, .v-unwritten { background: var(--bad); }
.v-compile_error, .v-launch_error { background: var(--warn); } .v-crash, .v-error { background: var(--crash); }
.v-timeout { background: var(--slow); } .v-nondeterministic, .v-implausible { background: var(--odd); }
.node.v-ok, .node.v-wrong, .node.v-compile_error, .node.v-launch_error, .node.v-crash, .node.v-timeout,
.node.v-nondeterministic, .node.v-implausible, .node.v-error, .node.v-input_modified, .node.v-unwritten { color: #fff; }
table.grid { border-collapse: collapse; width: 100%; font-size: 13px; }
table.grid th, table.grid td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
table.grid th { position: sticky; top: 0; background: #f9fafb; cursor: pointer; user-select: none; }
table.grid th.asc::after { content: " \25B2"; } table.grid th.desc::after { content: " \25BC"; }
table.grid td.n { text-align: right; font-variant-numeric: tabular-nums; }
table.grid td.msg { max-width: 420px; overflow-wrap: anywhere; color: #475467; }
table.grid td.knobs { font: 11px ui-monospace, monospace; overflow-wrap: anywhere; max-width: 220px; }
table.grid td.held { font: 11px ui-monospace, monospace; white-space: nowrap; }
table.grid td.warn { font-size: 11px; color: #b54708; max-width: 260px; overflow-wrap: anywhere; }
ul.warnings { color: #b54708; margin: 4px 0 8px; }
.profile { margin: 12px 0 20px; } .profile h3 { margin: 0 0 2px; font-size: 15px; }
table.grid.prof { width: auto; } table.grid.prof th { position: static; cursor: default; }
table.grid.prof tbody th { font-weight: 400; color: var(--muted); }
ol.diagnosis { margin: 6px 0 0; padding-left: 22px; } ol.diagnosis li:first-child { font-weight: 600; }
table.grid td.prof { font: 11px ui-monospace, monospace; white-space: nowrap; }
table.grid tr.best { background: #eff6ff; }
.synthetic { font-weight: 600; color: var(--bad); border: 1px solid var(--bad); padding: 6px 10px; }
.status { font-weight: 600; } .s-done { color: var(--ok); } .s-failed, .s-killed { color: var(--bad); }
footer { color: var(--muted); font-size: 12px; margin-top: 24px; }
#js-errors { color: var(--bad); white-space: pre-wrap; }
]]

-- Records every script error (and console.error call) into #js-errors.
M.errors_js = [[
(function () {
  var errs = [];
  function note(msg) {
    errs.push(String(msg));
    var el = document.getElementById("js-errors");
    if (el) { el.setAttribute("data-errors", String(errs.length)); el.textContent = "script errors: " + errs.join("; "); }
  }
  window.kevoErrors = errs;
  window.addEventListener("error", function (e) { note(e.message || "error"); });
  window.addEventListener("unhandledrejection", function (e) { note("unhandled rejection: " + e.reason); });
  var ce = console.error;
  console.error = function () { note(Array.prototype.join.call(arguments, " ")); return ce.apply(console, arguments); };
  document.addEventListener("DOMContentLoaded", function () { if (errs.length) note(errs.pop()); });
})();
]]

M.main_js = [[
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var data = JSON.parse(document.getElementById("kevo-data").textContent);
  var W = 560, H = 280, L = 52, R = 14, T = 14, B = 36;

  function el(name, attrs, parent, text) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  // ticks(lo, hi): about 5 round values covering [lo, hi]
  function ticks(lo, hi) {
    if (hi <= lo) hi = lo + 1;
    var raw = (hi - lo) / 5, mag = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / mag;
    var step = (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag, out = [];
    var end = Math.ceil(hi / step - 1e-9) * step;
    for (var v = Math.floor(lo / step) * step; v <= end + step * 1e-9; v += step) out.push(+v.toPrecision(12));
    return out;
  }
  function fmt(v) {
    var a = Math.abs(v);
    if (a >= 1e6) return (v / 1e6).toFixed(a >= 1e7 ? 0 : 1) + "M";
    if (a >= 1e3) return (v / 1e3).toFixed(a >= 1e4 ? 0 : 1) + "k";
    return String(+v.toPrecision(3));
  }

  // draw(svg, xkey, metric): verified evaluations as points, the best so far as a step line,
  // failed evaluations as ticks on the x axis. Sets data-points to the points drawn.
  function draw(svg, xkey, metric, xlabel) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var ev = data.evals, pts = [], fails = [], xmax = 0, ymax = 0;
    for (var i = 0; i < ev.length; i++) {
      var x = ev[i][xkey], y = ev[i][metric];
      if (typeof x !== "number") continue;
      if (x > xmax) xmax = x;
      if (typeof y === "number" && isFinite(y)) { pts.push({x: x, y: y, e: ev[i]}); if (y > ymax) ymax = y; }
      else if (!ev[i].ok) fails.push({x: x, e: ev[i]});
    }
    var ylabel = metric === "s" ? "speed-up (x)" : "% of roofline";
    svg.setAttribute("data-points", String(pts.length));
    svg.setAttribute("data-fails", String(fails.length));
    if (xkey === "t" && xmax === 0) {
      el("text", {x: W / 2, y: H / 2, "text-anchor": "middle", "class": "empty"}, svg, "no LLM tokens spent in this run");
      svg.setAttribute("data-points", "0");
      return;
    }
    var xlo = xkey === "i" ? 1 : 0, xt = ticks(xlo, Math.max(xmax, xlo + 1)), yt = ticks(0, Math.max(ymax * 1.05, metric === "s" ? 1 : 10));
    var x1 = xt[xt.length - 1], y1 = yt[yt.length - 1], x0 = xt[0];
    function sx(v) { return L + (v - x0) / (x1 - x0 || 1) * (W - L - R); }
    function sy(v) { return H - B - v / (y1 || 1) * (H - T - B); }
    yt.forEach(function (v) {
      el("line", {x1: L, x2: W - R, y1: sy(v), y2: sy(v), "class": "grid"}, svg);
      el("text", {x: L - 6, y: sy(v) + 3, "text-anchor": "end"}, svg, fmt(v));
    });
    xt.forEach(function (v) { el("text", {x: sx(v), y: H - B + 14, "text-anchor": "middle"}, svg, fmt(v)); });
    el("line", {x1: L, x2: W - R, y1: H - B, y2: H - B, "class": "axis"}, svg);
    el("line", {x1: L, x2: L, y1: T, y2: H - B, "class": "axis"}, svg);
    el("text", {x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle"}, svg, xlabel);
    el("text", {x: 12, y: (T + H - B) / 2, "text-anchor": "middle", transform: "rotate(-90 12 " + (T + H - B) / 2 + ")"}, svg, ylabel);
    if (metric === "s" && y1 >= 1) {
      el("line", {x1: L, x2: W - R, y1: sy(1), y2: sy(1), "class": "axis", "stroke-dasharray": "4 3"}, svg);
    }
    fails.forEach(function (f) {
      var t = el("line", {x1: sx(f.x), x2: sx(f.x), y1: H - B, y2: H - B - 6, "class": "fail"}, svg);
      el("title", {}, t, "evaluation " + f.e.id + ", candidate #" + f.e.c + ": " + f.e.v);
    });
    // best so far: a step line through the running maximum
    var best = -Infinity, d = "";
    pts.forEach(function (p) {
      if (p.y > best) {
        d += (d ? "L" + sx(p.x).toFixed(1) + "," + sy(best).toFixed(1) : "M" + sx(p.x).toFixed(1) + "," + sy(p.y).toFixed(1));
        best = p.y;
        d += "L" + sx(p.x).toFixed(1) + "," + sy(best).toFixed(1);
      }
    });
    if (d) { d += "L" + sx(xmax).toFixed(1) + "," + sy(best).toFixed(1); el("path", {d: d, "class": "best"}, svg); }
    pts.forEach(function (p) {
      var c = el("circle", {cx: sx(p.x).toFixed(1), cy: sy(p.y).toFixed(1), r: p.e.id === data.best ? 5 : 3.2,
                            "class": p.e.id === data.best ? "pt top" : "pt"}, svg);
      el("title", {}, c, "evaluation " + p.e.id + ", candidate #" + p.e.c + ": " +
         (metric === "s" ? p.y.toFixed(2) + "x" : p.y.toFixed(1) + "% of roofline") +
         (xkey === "t" ? ", after " + fmt(p.x) + " tokens" : ""));
    });
  }

  var metric = "s";
  function drawAll() {
    draw(document.getElementById("chart-evals"), "i", metric, "evaluation");
    draw(document.getElementById("chart-tokens"), "t", metric, "LLM tokens spent");
  }
  Array.prototype.forEach.call(document.querySelectorAll("button[data-metric]"), function (b) {
    b.addEventListener("click", function () {
      metric = b.getAttribute("data-metric");
      Array.prototype.forEach.call(document.querySelectorAll("button[data-metric]"), function (o) {
        o.classList.toggle("on", o === b);
      });
      drawAll();
    });
  });
  drawAll();

  // sortable table: click a header; numeric columns sort by data-v, empty values last
  var table = document.getElementById("cands");
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
    th.addEventListener("click", function () {
      var asc = !th.classList.contains("asc"), numeric = th.getAttribute("data-type") === "n";
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (o) { o.classList.remove("asc", "desc"); });
      th.classList.add(asc ? "asc" : "desc");
      var rows = Array.prototype.slice.call(table.tBodies[0].rows);
      function key(r) {
        var c = r.cells[col], v = c.hasAttribute("data-v") ? c.getAttribute("data-v") : c.textContent;
        return numeric ? (v === "" ? null : parseFloat(v)) : v.toLowerCase();
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
        return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
      });
      rows.forEach(function (r) { table.tBodies[0].appendChild(r); });
    });
  });
  document.body.setAttribute("data-rendered", "1");
})();
]]

return M
