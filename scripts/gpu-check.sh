#!/usr/bin/env bash
# Runs every GPU test and the GPU benchmarks on a GPU host, in one go, with logs under $OUT
# (default ./gpu-out). Build the bundle first on a machine with kevo's build dependencies:
#   scripts/gpu-bundle.sh .gpu-stage        (here)
#   scripts/gpu-check.sh [.gpu-stage] [tests|bench|all]   (on the GPU host, from the source root)
# ONLY=REGEX runs only the tests/benchmarks whose names match. A table of results is printed last.
set -u
cd "$(dirname "$0")/.."
stage="${1:-.gpu-stage}"
what="${2:-all}"
out="${OUT:-gpu-out}"
mkdir -p "$out"
export KEVO="$PWD/$stage/bin/kevo-env" KEVO_SRC="$PWD" KEVO_BUILD="$PWD/$stage"
export KEVO_CACHE="${KEVO_CACHE:-/tmp/kevo-cache}" KEVO_PYTHON="${KEVO_PYTHON:-python3}"
export PYTHONUNBUFFERED=1
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
[ -x "$KEVO" ] || { echo "gpu-check: no $KEVO (run scripts/gpu-bundle.sh $stage first)"; exit 2; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv |
  tee "$out/gpu.txt"
"$KEVO" doctor --offline 2>&1 | tee "$out/doctor.txt"

results=()
step() { # step NAME LIMIT_S CMD...: runs CMD with a time limit, logs to $out/NAME.log
  local name=$1 limit=$2; shift 2
  if [ -n "${ONLY:-}" ] && ! [[ $name =~ $ONLY ]]; then return; fi
  local t0=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$? verdict
  case $rc in 0) verdict=pass ;; 77) verdict=skip ;; 124) verdict=TIMEOUT ;; *) verdict="FAIL($rc)" ;; esac
  results+=("$(printf '%-28s %-9s %4ds' "$name" "$verdict" $((SECONDS - t0)))")
  echo "== $name: $verdict"; tail -n 25 "$out/$name.log"
}

if [ "$what" = all ] || [ "$what" = tests ]; then
  for t in tests/gpu/test_*.sh; do
    step "$(basename "${t%.sh}")" 420 bash "$t"
  done
fi
if [ "$what" = all ] || [ "$what" = bench ]; then
  for b in bench/*.sh; do
    step "bench-$(basename "${b%.sh}")" 420 bash "$b"
  done
fi
echo
echo "== summary (logs in $out/)"
printf '%s\n' "${results[@]}" | tee "$out/summary.txt"
! printf '%s\n' "${results[@]}" | grep -qE 'FAIL|TIMEOUT'
