#!/usr/bin/env bash
# GPU test: the suite's PyTorch columns. A suite of two KernelBench problems (tests/kbench relu
# and sum_dim, imported by the suite with real torch) with --gpus all, "the LLM" a loopback
# server answering each problem's prompts with its correct kernel (tests/kbench/P_llm_reply.md,
# chosen by the kernel's name in the prompt). Checked in the suite's JSON and table:
#   - each problem has a verified kernel, timed against PyTorch eager and torch.compile on the
#     worker's GPU (eager_ms, compiled_ms), and vs_eager = eager_ms / median_ms (same for
#     compile);
#   - fast_p against eager and torch.compile counts the two problems (of = 2) and at each p
#     the problems at least p times faster (recomputed here); the geometric means are the
#     geometric means of the problems' speed-ups (recomputed), over both problems;
#   - the terminal table shows the eager and compile columns and the three fast_p rows.
# Needs a GPU and python3 with torch: exits 77 (skipped) without them.
# env: KEVO, KEVO_SRC; KEVO_PYTHON (optional: the python with torch, default python3)
set -u
here="$(cd "$(dirname "$0")" && pwd)"
src="${KEVO_SRC:-$here/../..}"
kevo="${KEVO:?KEVO must name kevo}"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: test_suite_torch needs an NVIDIA GPU and there is none here" >&2
  exit 77
fi
py="${KEVO_PYTHON:-python3}"
if ! "$py" -c "import torch" >/dev/null 2>&1; then
  echo "SKIPPED: test_suite_torch needs python3 with torch (set KEVO_PYTHON)" >&2
  exit 77
fi
export KEVO_PYTHON="$py"
unset KEVO_LLM KEVO_LLM_BASE_URL KEVO_EVALUATOR KEVO_WORKER KEVO_FAULT
export KEVO_LLM_KEY_ENV=KEVO_TEST_NO_SUCH_KEY # no real key goes to the loopback server
tmp=$(mktemp -d)
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 1
kb="$src/tests/kbench"
# the suite imports each problem under its file's name: its kernel is NAME_kernel (kevo.kbench)
keys=()
for p in relu sum_dim; do
  keys+=("${p}_kernel(=$kb/${p}_llm_reply.md")
done
python3 "$src/tests/integration/canned_llm_server.py" --by-key "$(IFS=,; echo "${keys[*]}")" \
  "$tmp/llm.jsonl" >"$tmp/port" &
server=$!
for _ in $(seq 100); do grep -q PORT "$tmp/port" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/^PORT //p' "$tmp/port")
[ -n "$port" ] || { echo "FAIL: the loopback LLM server did not start"; exit 1; }
t0=$SECONDS
KEVO_LLM_BASE_URL="http://127.0.0.1:$port/v1" "$kevo" suite "$kb/relu.py" "$kb/sum_dim.py" \
  --llm openai:canned --strategy greedy --max-evals 2 --gpus all --db s.db --json s.json \
  --out "$tmp/out" >s.txt 2>s.err
rc=$?
echo "kevo suite: exit $rc, $((SECONDS - t0)) s"
sed -n '/^suite 1 (/,$p' s.txt
fail=0
[ $rc = 0 ] || { echo "FAIL: the suite failed"; tail -30 s.txt s.err; fail=1; }
grep -qE "^vs PyTorch eager +[0-9]+/2 " s.txt || { echo "FAIL: no fast_p row against eager"; fail=1; }
grep -qE "^vs torch\.compile +[0-9]+/2 " s.txt || { echo "FAIL: no fast_p row against torch.compile"; fail=1; }
grep -qE "^1 +[^ ]+ +[0-9]+ +done +[0-9]+ +[1-9][0-9]* +[0-9.]+x +[0-9.]+x +[0-9.]+x " s.txt ||
  { echo "FAIL: problem 1's line lacks its speed-ups against the reference, eager and compile"; fail=1; }
python3 - s.json <<'PY' || fail=1
import json, math, sys
d = json.load(open(sys.argv[1]))
bad = []
probs = d["problems"]
if len(probs) != 2: bad.append("%d problems, not 2" % len(probs))
for p in probs:
    name = p.get("name") or p["path"]
    if p["status"] != "done" or not p["verified"]:
        bad.append("%s: %s with %d verified" % (name, p["status"], p["verified"])); continue
    if p.get("reference") != "torch": bad.append("%s: reference %s" % (name, p.get("reference")))
    for key, ms in (("vs_eager", "eager_ms"), ("vs_compile", "compiled_ms")):
        v, t = p.get(key), p.get(ms)
        if not (v and t and v > 0 and t > 0):
            bad.append("%s: no %s / %s" % (name, key, ms)); continue
        if abs(v - t / p["median_ms"]) > 1e-6 * v:
            bad.append("%s: %s %.4g is not %s / median_ms" % (name, key, v, ms))
    print("%-12s %.4g ms; vs ref %.2fx, eager %.2fx (%.4g ms), torch.compile %.2fx (%.4g ms)" % (
        name, p["median_ms"], p.get("speedup") or 0, p.get("vs_eager") or 0,
        p.get("eager_ms") or 0, p.get("vs_compile") or 0, p.get("compiled_ms") or 0))
for base, key in (("eager", "vs_eager"), ("compile", "vs_compile")):
    xs = [p[key] for p in probs if p.get(key)]
    for q in (0, 1, 1.5, 2):
        f = d["fast_p"][base]["fast_%s" % q]
        want = sum(1 for x in xs if q == 0 or x >= q)
        if f["of"] != 2 or f["n"] != want:
            bad.append("fast_%s vs %s: %d/%d, want %d/2" % (q, base, f["n"], f["of"], want))
    g, n = d["geomean"].get(base), d["geomean"].get(base + "_of")
    want = math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None
    if n != len(xs) or n != 2 or g is None or abs(g - want) > 1e-6 * want:
        bad.append("geomean vs %s: %s over %s, want %s over %d" % (base, g, n, want, len(xs)))
    else:
        print("geomean vs %s: %.3fx over %d problems; fast_p %s" % (base, g, n, " ".join(
            "%s:%d/%d" % (q, d["fast_p"][base]["fast_%s" % q]["n"], 2) for q in (0, 1, 1.5, 2))))
for b in bad: print("FAIL " + b)
sys.exit(1 if bad else 0)
PY
[ $fail = 0 ] && echo "suite against PyTorch eager and torch.compile: all passed"
exit $fail
