#!/usr/bin/env bash
# GPU test (two GPUs of one model): a suite of the ten packaged recipes with --gpus all gives the
# same verified results as on one GPU, in the sense of docs/resume.md "Many GPUs": autotune
# sampling each seed's knob space at random (--set method=random: the candidates do not depend
# on timings), so both suites must propose the same candidates in the same order, and each
# candidate must get the same verdict. The two-GPU suite must have measured on both GPUs. The
# best speed-ups are printed side by side (measurements: compared loosely, not for equality).
# Exits 77 (skipped) without two GPUs.
# env: KEVO, KEVO_SRC; SUITE_EVALS (evaluations per problem, default 4)
set -u
here="$(cd "$(dirname "$0")" && pwd)"
src="${KEVO_SRC:-$here/../..}"
kevo="${KEVO:?KEVO must name kevo}"
n=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU ")
if [ "${n:-0}" -lt 2 ]; then
  echo "SKIPPED: test_suite_gpus needs two GPUs and there are ${n:-0} here" >&2
  exit 77
fi
evals=${SUITE_EVALS:-4}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
unset KEVO_EVALUATOR KEVO_WORKER KEVO_FAULT KEVO_LLM
fail=0
opts=(--max-evals "$evals" --set method=random --set batch=4 --seed 7)
t0=$(date +%s)
"$kevo" suite "$src/recipes" "${opts[@]}" --gpus 0 --db one.db --json one.json > one.txt 2>&1
rc1=$?
t1=$(date +%s)
"$kevo" suite "$src/recipes" "${opts[@]}" --gpus all --db two.db --json two.json > two.txt 2>&1
rc2=$?
t2=$(date +%s)
echo "one GPU: exit $rc1, $((t1 - t0)) s; --gpus all: exit $rc2, $((t2 - t1)) s"
[ "$rc1" = 0 ] && [ "$rc2" = 0 ] || { echo "FAIL: a suite failed"; tail -20 one.txt two.txt; fail=1; }
sed -n '/^suite 1 (/,$p' two.txt

# every problem's candidates and verdicts, in order (dump_run.lua), and the GPUs that measured
cat > dump.lua <<'LUA'
local db = require("kevo.archive").open(arg[1], {readonly = true})
local json = require "kevo.json"
local runs = {}
for _, r in ipairs(db:runs()) do
  local c = json.decode(r.config)
  if type(c.suite) == "table" then runs[#runs + 1] = {index = c.suite.index, id = r.id} end
end
table.sort(runs, function(a, b) return a.index < b.index end)
local gpus = {}
for _, r in ipairs(runs) do
  for _, c in ipairs(db:candidates(r.id)) do
    local e = db:evaluations(c.id)[1]
    local res = json.decode(e.result)
    print(("problem %d %s %s %s"):format(r.index, c.source_hash:sub(1, 12), c.knobs, e.verdict))
    local g = res.device and res.device.gpu
    if g then gpus[g] = (gpus[g] or 0) + 1 end
  end
end
for g, k in pairs(gpus) do io.stderr:write(("gpu %s: %d evaluations\n"):format(g, k)) end
LUA
"$kevo" script dump.lua one.db > one.dump 2>one.gpus
"$kevo" script dump.lua two.db > two.dump 2>two.gpus
cat two.gpus
[ "$(wc -l < one.dump)" -ge 10 ] || { echo "FAIL: the one-GPU suite evaluated almost nothing"; fail=1; }
# the same candidates in the same order; the same verdict, except where a verdict judges a time
# (timeout, implausible: docs/resume.md "Many GPUs"), which is noted
python3 - one.dump two.dump <<'PY' || fail=1
import sys
a, b = (open(p).read().splitlines() for p in sys.argv[1:3])
timed = {"ok", "timeout", "implausible"}
bad = 0
if len(a) != len(b):
    print("FAIL: %d evaluations on one GPU, %d on two" % (len(a), len(b))); sys.exit(1)
for x, y in zip(a, b):
    if x == y: continue
    (*kx, vx), (*ky, vy) = x.split(), y.split()
    if kx == ky and {vx, vy} <= timed:
        print("note: a timing verdict differs: %s / %s" % (x, vy))
    else:
        print("FAIL: %s  vs  %s" % (x, y)); bad += 1
if not bad:
    print("ok   the same candidates with the same verdicts on one GPU and on two (%d evaluations)" % len(a))
sys.exit(1 if bad else 0)
PY
[ "$(grep -c '^gpu ' two.gpus)" = 2 ] || { echo "FAIL: --gpus all did not measure on two GPUs"; fail=1; }
python3 - one.json two.json <<'PY' || fail=1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
print("%-16s %10s %10s" % ("problem", "1 GPU", "2 GPUs"))
for x, y in zip(a["problems"], b["problems"]):
    s = lambda p: "%.2fx" % p["speedup"] if p.get("speedup") else "-"
    print("%-16s %10s %10s" % (x.get("name") or x["path"], s(x), s(y)))
fa, fb = a["fast_p"]["reference"]["fast_0"], b["fast_p"]["reference"]["fast_0"]
print("fast_0: one GPU %d/%d, two GPUs %d/%d" % (fa["n"], fa["of"], fb["n"], fb["of"]))
sys.exit(0 if fa["n"] == fb["n"] else 1)
PY
[ $fail = 0 ] && echo "suite --gpus all: all passed"
exit $fail
