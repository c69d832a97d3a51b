#!/usr/bin/env bash
# kevo report on a synthetic search archive (tests/integration/report_fixture.lua): terminal and
# --json content, exit codes, and the HTML page: well-formed, self-contained, the best kernel's
# source present and escaped, hostile archive text (a closing script tag) never raw.
set -u
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/out
t() { # t NAME EXPECTED_RC CMD... : runs CMD, checks its exit code
  local name=$1 want=$2; shift 2
  "$@" >"$out" 2>&1; local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, want $want"; sed 's/^/  | /' "$out"; fail=1
  else echo "ok   $name"; fi
}
has() { grep -qF -- "$1" "$out" || { echo "FAIL: output lacks '$1'"; sed 's/^/  | /' "$out" | head -40; fail=1; }; }
lacks() { if grep -qF -- "$1" "$out"; then echo "FAIL: output has '$1'"; fail=1; fi; }

db=$tmp/kevo.db
"$KEVO" script "$KEVO_SRC/tests/integration/report_fixture.lua" "$db" >"$tmp/fixture" || { echo "FAIL: fixture"; exit 1; }
read -r _ run1 _ best1 < <(sed -n 1p "$tmp/fixture")
read -r _ run2 _ _ < <(sed -n 2p "$tmp/fixture")
read -r _ prof _ pparent _ pfail < <(sed -n 3p "$tmp/fixture")

t "report run" 0 "$KEVO" report "$run1" --db "$db"
has "run $run1: softmax with evolve (done)"
has "best: candidate $best1 (tune, cuda), 5.72x over the reference"
has "median      0.2799 ms (reference 1.6000 ms)"
has "roofline    79.9%, 3836 GB/s"
has "evaluations 42 of 42 candidates: ok 23"
has "LLM         14 calls, 69.8k tokens in, 14.9k out"
has "measured    NVIDIA H200, sm_90, driver 13000"
has "-> #$best1 tune 5.72x"
has "verified    on held-out shapes M=1041,N=8150 M=3,N=77 (drawn for that evaluation), 1 stress trials"
has "warning     reads %globaltimer (a timer): timing-dependent code"
# profiles (ctx:profile's journal entries): figures beside the timing, against the reference and
# the parent, the first finding; a failed profile says why
has "profiles    3 candidates profiled (Nsight Compute)"
has "                       candidate   reference  parent #$pparent"
has "      DRAM %                91.3        60.1        72.4"
has "      1. memory-bound at 91% of DRAM bandwidth (1.07 GB moved)"
has "      no profile: E_UNSUPPORTED: ==ERROR== ERR_NVGPUCTRPERM"
t "report last = run 2" 0 "$KEVO" report last --db "$db"
has "run $run2: softmax with tune (failed)"
has "no verified kernel"
t "KEVO_DB" 0 env KEVO_DB="$db" "$KEVO" report "$run1"
has "best: candidate $best1"

t "report --json" 0 "$KEVO" report "$run1" --db "$db" --json
python3 - "$out" "$best1" <<'PY' || fail=1
import json, sys
s = json.load(open(sys.argv[1]))
best = int(sys.argv[2])
assert s["best"]["candidate"] == best, s["best"]
assert abs(s["best"]["speedup"] - 5.7166) < 1e-3, s["best"]["speedup"]
assert sum(s["verdicts"].values()) == s["evaluations"] == 42, s["verdicts"]
assert s["verdicts"]["ok"] == 23 and s["candidates"] == 42
assert s["llm"]["calls"] == 14 and s["llm"]["input_tokens"] > 0
chain = [c["candidate"] for c in s["lineage"]]
assert chain[-1] == best and chain[0] == 1, chain
assert s["best"]["fingerprint"]["device"] == "NVIDIA H200"
assert s["best"]["held_out"] == ["M=1041,N=8150", "M=3,N=77"] and s["best"]["stress_trials"] == 1
assert s["best"]["warnings"][0].startswith("reads %globaltimer"), s["best"]["warnings"]
print("ok   --json content")
PY

t "unknown run" 2 "$KEVO" report 999 --db "$db"
has "no run 999"
t "not a run id" 2 "$KEVO" report abc --db "$db"
t "no archive" 2 "$KEVO" report 1 --db "$tmp/missing.db"
has "no archive at"
t "missing run argument" 2 "$KEVO" report --db "$db"
t "unknown option" 2 "$KEVO" report 1 --db "$db" --bogus
head -c 4096 /dev/urandom > "$tmp/corrupt.db"
t "corrupt archive" 1 "$KEVO" report 1 --db "$tmp/corrupt.db"
t "unwritable page" 1 "$KEVO" report "$run1" --db "$db" --html "$tmp/no/such/dir/r.html"

page=$tmp/r.html
t "report --html" 0 "$KEVO" report "$run1" --db "$db" --html "$page"
has "page: $page"
python3 - "$page" "$best1" "$prof" "$pparent" "$pfail" <<'PY' || fail=1
import html.parser, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
VOID = {"meta", "br", "hr", "img", "input", "link", "area", "base", "col", "embed", "source", "track", "wbr"}
class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.scripts, self.errors, self.urls = [], 0, [], []
    def handle_starttag(self, tag, attrs):
        if tag == "script": self.scripts += 1
        for k, v in attrs:
            if k in ("src", "href", "action") or (v and re.search(r"url\(", v)): self.urls.append((tag, k, v))
        if tag not in VOID: self.stack.append(tag)
    def handle_endtag(self, tag):
        if tag in VOID: return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("</%s> closes <%s> at %s" % (tag, self.stack[-1] if self.stack else None, self.getpos()))
        else: self.stack.pop()
p = P(); p.feed(text); p.close()
assert not p.errors, p.errors[:5]
assert not p.stack, "unclosed: %s" % p.stack
assert p.scripts == 3, "script elements: %d (hostile text made one?)" % p.scripts
assert not p.urls, p.urls
# no external resources: the only URL is the SVG namespace, inside the script
urls = set(re.findall(r"https?://[^\s\"'<>)]+", text))
assert urls <= {"http://www.w3.org/2000/svg"}, urls
hostile = "</script><script>alert(1)</script>"
assert hostile not in text and "<script>alert" not in text, "hostile text is raw"
esc = "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"
assert esc in text, "the hostile text is missing (escaped)"
# the best kernel's source, escaped, with line numbers
assert "Best kernel: candidate #%s" % sys.argv[2] in text
assert '<td class="ln">37</td><td class="code">  for (int i = threadIdx.x; i &lt; N; i += BLOCK) out[i]' in text
assert 'extern &quot;C&quot; __global__ void softmax_rows' in text
assert text.count('data-candidate="') == 42, "lineage nodes"
assert 'data-rows="42"' in text
# held-out shapes, stress trials and warnings: the best kernel's, and every evaluation's
assert "Verified on held-out shapes <b>M=1041,N=8150, M=3,N=77</b>" in text
assert "1 stress trial, inputs' seed secret" in text
assert '<li>warning: reads %globaltimer (a timer): timing-dependent code</li>' in text
assert '<li>warning: ' + esc + '</li>' in text, "the hostile warning, escaped"
assert text.count('<td class="held">M=') == 42, "a held-out cell per candidate"
assert text.count('<td class="warn" data-v="1">') + text.count('<td class="warn" data-v="2">') == 11
assert '<th>held-out shapes</th><th data-type="n">warnings</th>' in text
# the chart data block cannot end early: no '<' inside it
data = re.search(r'<script type="application/json" id="kevo-data">(.*?)</script>', text, re.S).group(1)
assert "<" not in data and ">" not in data
import json; d = json.loads(data)
assert len(d["evals"]) == 42 and sum(1 for e in d["evals"] if e.get("s") is not None) == 23
# profiles beside the timings: the candidate against the reference and its parent
prof, parent, failed = sys.argv[3], sys.argv[4], sys.argv[5]
sec = re.search(r'<section id="profiles">(.*?)</section>', text, re.S).group(1)
assert sec.count('<div class="profile"') == 3, "a block per profiled candidate"
blk = re.search(r'data-profile="%s"><h3>(.*?)</div>' % prof, sec, re.S).group(1)
assert ('<tr><th></th><th>candidate #%s</th><th>reference</th><th>parent #%s</th></tr>'
        % (prof, parent)) in blk, blk[:400]
assert ('<tr><th>DRAM throughput (% of peak)</th><td class="n">91.3</td><td class="n">60.1</td>'
        '<td class="n">72.4</td></tr>') in blk
assert re.search(r'<tr><th>speed-up \(timed\)</th><td class="n">[0-9.]+x</td>'
                 r'<td class="n">1.00x</td><td class="n">[0-9.]+x</td></tr>', blk), "timings"
assert '<li data-kind="dram_peak">memory-bound at 91% of DRAM bandwidth' in blk
assert '<li data-kind="stalls">warps stall on: ' + esc + '</li>' in blk, "hostile finding escaped"
fb = re.search(r'data-profile="%s"><h3>(.*?)</div>' % failed, sec, re.S).group(1)
assert "No profile: E_UNSUPPORTED: ==ERROR== ERR_NVGPUCTRPERM." in fb, fb
assert '<th>message</th><th>profile</th>' in text
assert text.count('<td class="prof" title="memory-bound at 91%') == 1, "candidates table cell"
print("ok   html well-formed, self-contained, escaped, profiles")
PY

exit $fail
