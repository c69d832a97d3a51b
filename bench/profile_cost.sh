#!/usr/bin/env bash
# What one profile costs, and what cuts it (docs/profile.md "Cost"), on the GPU host:
#  1. the known kernels (tests/gpu/profile_kernels/known.cu) through the worker's profile op
#     (tests/gpu/profile_worker.py: one batch of six, one candidate alone, a batch of eight, the
#     time per candidate), their diagnosis, and the batch's reply as $OUT/known_h200.json (the CI
#     fixture tests/fixtures/ncu/known_h200.json);
#  2. ncu run by hand over the requests the worker wrote (kept by a wrapper given as KEVO_NCU),
#     once per set of flags: the wall time, the kernels profiled and ncu's passes, and a timeline
#     of ncu's ==PROF== lines (seconds since ncu started): the front-end alone, the replay child
#     alone, the worker's flags, a kernel filter, fewer metrics, no cache flush, no rules, one
#     process, application replay;
#  3. what fills sm__throughput for the tensor-core, register and bank-conflict kernels.
# Needs a GPU, nvcc and ncu with access to the counters; about 70 s.
# env: KEVO (bin/kevo-env of a bundle, or the binary), OUT (default: a temporary folder; gets
# known_h200.json and profile_cost.tgz with every output)
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
res="$t/res"
mkdir -p "$res" "$t/cap" "$t/empty"
left() { [ $((SECONDS - T0)) -lt "${1:-80}" ]; }
ncu_bin=$(command -v ncu) || { echo "SKIPPED: no ncu" >&2; exit 77; }
echo "ncu: $ncu_bin"; ncu --version | tail -1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
kbin="$(dirname "${KEVO:?KEVO must name kevo}")/kevo"
[ -x "$kbin" ] || kbin="$KEVO"
export LD_LIBRARY_PATH="$(dirname "$KEVO")/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
nvcc -cubin -arch="sm_$cc" -O3 -o "$t/known.cubin" tests/gpu/profile_kernels/known.cu || exit 1

# the wrapper: keeps a copy of each request the worker hands to ncu, then runs ncu as asked
cat >"$t/ncuwrap" <<EOF
#!/usr/bin/env bash
n=\$(ls "$t/cap" | wc -l); n=\$((n + 1)); mkdir -p "$t/cap/\$n"
prev=; for a in "\$@"; do [ "\$prev" = --profile-replay ] && cp "\$a/request" "$t/cap/\$n/"; prev=\$a; done
printf '%s\n' "\$@" >"$t/cap/\$n/args"
exec "$ncu_bin" "\$@"
EOF
chmod +x "$t/ncuwrap"
cat >"$t/stamp.py" <<'PY'
import sys, time
t0 = time.time()
for line in iter(sys.stdin.readline, ""):
    sys.stdout.write("%7.3f %s" % (time.time() - t0, line))
PY
el() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", b - a}'; }

echo "== 1. the known kernels through the worker (profile_worker.py), the fixture"
s=$SECONDS
KEVO_NCU="$t/ncuwrap" PYTHONUNBUFFERED=1 timeout 70 python3 tests/gpu/profile_worker.py \
  "$KEVO" "$t/known.cubin" "$res" --standby
echo "(profile_worker.py: $((SECONDS - s)) s; requests captured: $(ls "$t/cap" | tr '\n' ' '))"
if [ -f "$res/profile_batch.json" ]; then
  cp "$res/profile_batch.json" "$OUT/known_h200.json"
  "$KEVO" script tests/gpu/profile_diagnose.lua "$res/profile_batch.json"
fi
metrics=$(sed -n '/^--metrics$/{n;p;q}' "$t/cap/1/args" 2>/dev/null)
[ -n "$metrics" ] || { echo "no captured request"; tar czf "$OUT/profile_cost.tgz" -C "$t" res cap; exit 1; }
# the standby with the warp-stall metrics left out (KEVO_NCU_METRICS): what they cost there
KEVO_NCU_METRICS=$(echo "$metrics" | tr ',' '\n' | grep -v issue_stalled | paste -sd,) \
  timeout 30 python3 - "$KEVO" "$t/known.cubin" <<'PY'
import os, sys, time
sys.path.insert(0, "tests/gpu")
from worker_client import Worker
import profile_worker as pw
kevo, cubin = sys.argv[1], open(sys.argv[2], "rb").read()
w = Worker(kevo)
w.call({"op": "profile_standby"}, [], timeout=20)
time.sleep(4.5)
t0 = time.time()
r = w.call(pw.request(pw.plans_known()[1:2]), [cubin, cubin], timeout=60)
print("standby, no stall metrics: one candidate %.2f s (ok=%s, %d metrics)" % (
    time.time() - t0, r.get("ok"), len(r["plans"][0]["kernels"][0]["metrics"]) if r.get("ok") else 0))
w.close()
PY

# run NAME REQ [ncu flags...]: ncu over a copy of captured request REQ with the worker's own
# flags plus the given ones; prints the wall time, kernels profiled and passes
base=(--csv --print-units base --clock-control none)
run() {
  local name=$1 req=$2; shift 2
  left || { echo "$name: skipped (budget)"; return; }
  local d="$t/run-$name"
  mkdir -p "$d"; cp "$t/cap/$req/request" "$d/"
  local a b
  a=$(date +%s.%N)
  timeout "${TO:-20}" stdbuf -oL -eL "$@" "$kbin" worker --profile-replay "$d" --device 0 2>&1 |
    python3 -u "$t/stamp.py" >"$res/$name.out"
  b=$(date +%s.%N)
  local k p
  k=$(grep -c '"gpu__time_duration.sum"' "$res/$name.out")
  p=$(grep -o '[0-9]* pass' "$res/$name.out" | awk '{s+=$1; n++} END{printf "%d in %d kernels", s, n}')
  printf '%-26s %6.2f s  kernels in CSV: %-3s passes: %s\n' "$name" "$(el "$a" "$b")" "$k" "$p"
}
echo "== 2. time to profile: one candidate (request 2), eight (3), the six known (1)"
a=$(date +%s.%N); ncu --version >/dev/null; b=$(date +%s.%N)
printf '%-26s %6.2f s\n' "ncu --version" "$(el "$a" "$b")"
a=$(date +%s.%N); ncu "${base[@]}" --metrics gpu__time_duration.sum /bin/true >"$res/true.out" 2>&1
b=$(date +%s.%N); printf '%-26s %6.2f s\n' "ncu over /bin/true" "$(el "$a" "$b")"
d="$t/alone"; mkdir -p "$d"; cp "$t/cap/2/request" "$d/"
a=$(date +%s.%N); "$kbin" worker --profile-replay "$d" --device 0; b=$(date +%s.%N)
printf '%-26s %6.2f s  manifest: %s\n' "replay child, no ncu" "$(el "$a" "$b")" "$(cat "$d/manifest")"
names=$(python3 - "$t/cap/2/request" <<'PY'
import json, sys
import struct
raw = open(sys.argv[1], "rb").read()  # a frame: u32 LE header length, the JSON header, blobs
n = struct.unpack("<I", raw[:4])[0]
hdr = json.loads(raw[4:4 + n])
ks = {k["name"] for p in hdr["profile"]["plans"] for k in p["plan"]["kernels"]}
print("|".join(sorted(ks)))
PY
)
echo "plan kernels: $names"
fast=(--kernel-name-base mangled --kernel-name "regex:^($names)\$" --target-processes application-only --apply-rules no)
nostall=$(echo "$metrics" | tr ',' '\n' | grep -v issue_stalled | paste -sd,)
run single-base 2 ncu "${base[@]}" --metrics "$metrics"
run single-names 2 ncu "${base[@]}" --metrics "$metrics" --kernel-name-base mangled --kernel-name "regex:^($names)\$"
run single-skipkv 2 ncu "${base[@]}" --metrics "$metrics" --kernel-name "regex:^(?!kv_)"
run single-fast 2 ncu "${base[@]}" --metrics "$metrics" "${fast[@]}"
run eight-base 3 ncu "${base[@]}" --metrics "$metrics"
run eight-fast 3 ncu "${base[@]}" --metrics "$metrics" "${fast[@]}"
run single-nostall 2 ncu "${base[@]}" --metrics "$nostall" "${fast[@]}"
run single-1metric 2 ncu "${base[@]}" --metrics gpu__time_duration.sum "${fast[@]}"
echo "== 3. the tensor kernel: what fills sm__throughput (breakdown), tensor metrics of gh100"
left 84 && run known-breakdown 1 ncu "${base[@]}" --kernel-name "regex:^(tensor_mma|register_heavy|bank_conflicts)\$" \
  --metrics "breakdown:sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
grep -E '"(tensor_mma|register_heavy|bank_conflicts)"' "$res/known-breakdown.out" 2>/dev/null |
  awk -F'","' '{for (i = 1; i <= NF; i++) if ($i ~ /^(tensor_mma|register_heavy|bank_conflicts)$/) k = $i
                print k, $(NF-2), $NF}' | head -60
left 84 && ncu --query-metrics --chip "gh100" 2>/dev/null | grep -iE "pipe_(tensor|shared)" | head -20
echo "== 4. kevo eval --profile end to end (the standby starts while the kernel is judged)"
if left 78; then
  a=$(date +%s.%N)
  timeout 40 "$KEVO" eval recipes/vector_add.yaml recipes/vector_add/vectorized.cu --profile \
    --json >"$res/eval_profile.json" 2>"$res/eval_profile.err"
  b=$(date +%s.%N)
  python3 - "$res/eval_profile.json" "$(el "$a" "$b")" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("kevo eval --profile: no JSON (%s)" % e); sys.exit(0)
p = r.get("profile") or {}
print("kevo eval --profile: %s s wall, verdict %s, profile ok=%s, %s ms in the profile stage; %s"
      % (sys.argv[2], r.get("verdict"), p.get("ok"), p.get("ms"),
         (p.get("diagnosis") or [{}])[0].get("text", p.get("error"))))
PY
fi
left 74 && TO=10 run single-appreplay 2 ncu "${base[@]}" --metrics "$metrics" --replay-mode application "${fast[@]}"
run single-nocache 2 ncu "${base[@]}" --metrics "$metrics" "${fast[@]}" --cache-control none
run single-norules 2 ncu "${base[@]}" --metrics "$metrics" --apply-rules no --section-folder "$t/empty"
run single-apponly 2 ncu "${base[@]}" --metrics "$metrics" --target-processes application-only
echo "== timeline of single-base (s since ncu started)"
grep "==" "$res/single-base.out" | head -20
echo "== timeline of single-fast"
grep "==" "$res/single-fast.out" | head -12
tar czf "$OUT/profile_cost.tgz" -C "$t" res cap
echo "total $((SECONDS - T0)) s"
