#!/usr/bin/env bash
# What one profile costs and where its time goes (docs/profile.md "Cost"), on the GPU host:
#  1. the known kernels (tests/gpu/profile_kernels/known.cu) in one batch through the worker's
#     profile op, with the pipe metrics added: the reply as $OUT/known_h200.json (the CI fixture
#     tests/fixtures/ncu/known_h200.json), ncu's passes per kernel, the diagnosis;
#  2. one candidate alone through a standby, per variant (the cuts on, the defaults, or off:
#     KEVO_PROFILE_WARMUP, KEVO_PROFILE_FAST_EXIT, KEVO_PROFILE_EARLY_READ=0; other metric sets):
#     the wall time and a timeline of each request in ms since the worker got it
#     (bench/profile_timeline.py): the worker's steps, the replay child's, and ncu's log as it
#     was written (through a wrapper given as KEVO_NCU that timestamps it);
#  3. ncu's replay passes for the set and parts of it (ncu by hand, without --csv);
#  4. kevo eval --profile end to end, with the cuts and without.
# Needs a GPU, nvcc and ncu with access to the counters; about 80 s.
# env: KEVO (bin/kevo-env of a bundle, or the binary), OUT (default: a temporary folder; gets
# known_h200.json, known_h200.csv and profile_cost.tgz with every output), BUDGET_S (80)
set -u
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 ||
  { echo "SKIPPED: bench/profile_cost.sh needs an NVIDIA GPU" >&2; exit 77; }
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
T0=$SECONDS
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/cap"
ncu_bin=$(command -v ncu) || { echo "SKIPPED: no ncu" >&2; exit 77; }
echo "ncu: $ncu_bin"; ncu --version | tail -1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
nvcc -cubin -arch="sm_$cc" -O3 -o "$t/known.cubin" tests/gpu/profile_kernels/known.cu || exit 1

# the wrapper: runs ncu as asked while a tail keeps each chunk of its --log-file with the
# CLOCK_MONOTONIC time it appeared (cap/N/stamped); cap/N/ended once ncu has exited
cat >"$t/tail.py" <<'PY'
import os, sys, time
log, out, flag = sys.argv[1:4]
f, o = None, open(out, "w")
def take():
    b = f.read() if f else b""
    if b:
        o.write("%.1f %r\n" % (time.monotonic() * 1000, b)); o.flush()
while True:
    if f is None and os.path.exists(log):
        f = open(log, "rb")
    take()
    if os.path.exists(flag):
        take(); break
    time.sleep(0.002)
PY
cat >"$t/ncuwrap" <<EOF
#!/usr/bin/env bash
n=\$(ls "$t/cap" | wc -l); n=\$((n + 1)); d="$t/cap/\$n"; mkdir -p "\$d"
printf '%s\n' "\$@" >"\$d/args"
prev=; for a in "\$@"; do
  [ "\$prev" = --profile-replay ] && cp "\$a/request" "\$d/" 2>/dev/null; prev=\$a
done
log=; prev=; for a in "\$@"; do [ "\$prev" = --log-file ] && log=\$a; prev=\$a; done
python3 "$t/tail.py" "\$log" "\$d/stamped" "\$d/ended" & tp=\$!
"$ncu_bin" "\$@"; rc=\$?
touch "\$d/ended"; wait \$tp
exit \$rc
EOF
chmod +x "$t/ncuwrap"

# the worker's own metric set, as it hands it to ncu
metrics=$(KEVO_NCU="$t/ncuwrap" timeout 30 python3 - "$KEVO" "$t/known.cubin" <<'PY'
import json, sys
sys.path.insert(0, "tests/gpu")
from worker_client import Worker
import profile_worker as pw
w = Worker(sys.argv[1])
r = w.call(pw.request(pw.plans_known()[1:2]), [open(sys.argv[2], "rb").read()] * 2, timeout=25)
w.close()
print("cold, no standby: ok=%s %s ms, timeline %s" % (r.get("ok"), r.get("ms"),
      json.dumps(r.get("timeline"))), file=sys.stderr)
PY
sed -n '/^--metrics$/{n;p;q}' "$t/cap/1/args" 2>/dev/null)
[ -n "$metrics" ] ||
  { echo "no metric set captured"; tar czf "$OUT/profile_cost.tgz" -C "$t" cap; exit 1; }
echo "a first profile (cold, no standby): $((SECONDS - T0)) s since the start"
pipes="sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"
pipes+=",sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"
pipes+=",sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active"
pipes+=",sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active"
pipes+=",sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active"
pipes+=",sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active"
pipes+=",sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"
pipes+=",sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active"
pipes+=",sm__issue_active.avg.pct_of_peak_sustained_active"
B=${BUDGET_S:-80}
KEVO_NCU="$t/ncuwrap" BUDGET_S=$((B - 24 - (SECONDS - T0))) PYTHONUNBUFFERED=1 \
  timeout $((B - 19 - (SECONDS - T0))) \
  python3 bench/profile_timeline.py "$KEVO" "$t/known.cubin" "$t/cap" "$OUT" "$metrics" "$pipes"
echo "profile_timeline.py: exit $?"

echo "== 3. ncu's replay passes (ncu by hand, without --csv it prints them) over the first request"
kbin="$(dirname "$KEVO")/kevo"
[ -x "$kbin" ] || kbin="$KEVO"
export LD_LIBRARY_PATH="$(dirname "$KEVO")/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
all=$(echo "$metrics,$pipes" | tr ',' '\n' | awk '!seen[$0]++')
passes() { # NAME METRICS: ncu's passes and wall time for that set over the copy kernel
  [ $((SECONDS - T0)) -lt $((B - 3)) ] || { echo "$1: skipped (budget)"; return; }
  local d="$t/passes-$1" a b
  mkdir -p "$d"; cp "$t/cap/1/request" "$d/" || return
  a=$(date +%s.%N)
  timeout 10 ncu --print-units base --clock-control none --target-processes application-only \
    --apply-rules no --kernel-name-base mangled --kernel-name 'regex:^copy_vec4$' --metrics "$2" \
    "$kbin" worker --profile-replay "$d" --device 0 >"$d/out" 2>&1
  b=$(date +%s.%N)
  printf '%-14s %2d metrics  %6.2f s  %s\n' "$1" "$(echo "$2" | tr ',' '\n' | wc -l)" \
    "$(awk -v a="$a" -v b="$b" 'BEGIN{print b - a}')" \
    "$(grep -o '[0-9]* pass[es]*' "$d/out" | head -1)"
  grep -m2 '==ERROR==' "$d/out"
}
passes all "$(echo "$all" | paste -sd,)"
passes no-throughput "$(echo "$all" | grep -v throughput | paste -sd,)"
passes throughput "$(echo "$all" | grep throughput | paste -sd,)"
passes stalls "$(echo "$all" | grep issue_stalled | paste -sd,)"

echo "== 4. kevo eval --profile end to end (the standby starts while the kernel is judged)"
evalp() { # NAME [ENV=V...]
  local name=$1 a b; shift
  [ $((SECONDS - T0)) -lt $((B - 8)) ] || { echo "$name: skipped (budget)"; return; }
  a=$(date +%s.%N)
  env "$@" timeout 30 "$KEVO" eval recipes/vector_add.yaml recipes/vector_add/vectorized.cu \
    --profile --json >"$t/eval-$name.json" 2>"$t/eval-$name.err"
  b=$(date +%s.%N)
  python3 - "$t/eval-$name.json" "$(awk -v a="$a" -v b="$b" 'BEGIN{print b - a}')" "$name" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("%s: no JSON (%s)" % (sys.argv[3], e)); sys.exit(0)
p = r.get("profile") or {}
print("kevo eval --profile, %s: %.2f s wall, verdict %s, profile ok=%s, %s ms in the profile "
      "stage; %s" % (sys.argv[3], float(sys.argv[2]), r.get("verdict"), p.get("ok"), p.get("ms"),
                      (p.get("diagnosis") or [{}])[0].get("text", p.get("error"))))
PY
}
evalp defaults
evalp cuts-off KEVO_PROFILE_WARMUP=0 KEVO_PROFILE_FAST_EXIT=0 KEVO_PROFILE_EARLY_READ=0
[ -s "$OUT/known_h200.json" ] &&
  "$KEVO" script tests/gpu/profile_diagnose.lua "$OUT/known_h200.json"
tar czf "$OUT/profile_cost.tgz" -C "$t" cap
echo "total $((SECONDS - T0)) s"
