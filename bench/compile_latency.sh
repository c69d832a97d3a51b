#!/usr/bin/env bash
# NVRTC compile latency through kevo (kevo.cuda) against `nvcc -cubin` subprocesses of the same
# files, in the same run. No GPU needed. Usage: bench/compile_latency.sh [KERNEL.cu ...]
#   KEVO: the kevo binary (default build/kevo); REPS: repetitions (default 15);
#   NVCC_REPS (default 5). The kernels default to the recipes' sources and the good kernels of
#   the adversarial corpus.
# Columns: cold = the first compile of a fresh process (NVRTC start-up included, no cache);
#   warm = median of compiles in a warm process (no cache); disk = the first compile of a fresh
#   process whose cache holds the entry; mem = median memory-cache hit; nvcc = median wall time
#   of an `nvcc -cubin -arch=sm_90` subprocess.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kevo="${KEVO:-$root/build/kevo}"
reps="${REPS:-15}"
nvcc_reps="${NVCC_REPS:-5}"
helper="$root/bench/compile_latency.lua"
if [ -d /usr/local/cuda/bin ]; then export PATH="$PATH:/usr/local/cuda/bin"; fi
[ -x "$kevo" ] || { echo "compile_latency: no kevo binary at $kevo (build first)" >&2; exit 2; }

if [ $# -gt 0 ]; then
  files=("$@")
else
  shopt -s nullglob
  files=("$root"/recipes/*/*.cu "$root"/tests/adversarial/va_good.cu \
         "$root"/tests/adversarial/sm_good.cu "$root"/tests/adversarial/sm_no_tail.cu \
         "$root"/bench/compile_latency_bf16.cu)
fi
have_nvcc=1
command -v nvcc >/dev/null || have_nvcc=0

cache="$(mktemp -d)"
trap 'rm -rf "$cache"' EXIT
export KEVO_CACHE="$cache"

field() { sed -n "s/.*$1 \([0-9.]*\).*/\1/p"; }

echo "kevo: $("$kevo" version 2>/dev/null | head -1); $(nproc) cpus; reps $reps (nvcc $nvcc_reps)"
printf '%-24s %8s %8s %8s %8s %9s %10s %10s\n' kernel cold_ms warm_ms disk_ms mem_ms nvcc_ms \
  nvcc/warm nvcc/cold
warms=()
for f in "${files[@]}"; do
  name="$(basename "$f")"
  cold="$("$kevo" script "$helper" cold "$f" | field cold)"
  warm="$("$kevo" script "$helper" warm "$f" "$reps" | field warm)"
  "$kevo" script "$helper" hit "$f" 1 >/dev/null            # fills the disk cache
  hit="$("$kevo" script "$helper" hit "$f" "$reps")"        # fresh process: a disk hit first
  disk="$(echo "$hit" | field first)"
  mem="$(echo "$hit" | field mem)"
  if [ $have_nvcc = 1 ]; then
    nv="$("$kevo" script "$helper" nvcc "$f" "$nvcc_reps" | field nvcc)"
    r1="$(awk -v a="$nv" -v b="$warm" 'BEGIN{printf "%.1fx", a/b}')"
    r2="$(awk -v a="$nv" -v b="$cold" 'BEGIN{printf "%.1fx", a/b}')"
  else
    nv="-"; r1="-"; r2="-"
  fi
  warms+=("$warm")
  printf '%-24s %8s %8s %8s %8s %9s %10s %10s\n' "$name" "$cold" "$warm" "$disk" "$mem" "$nv" \
    "$r1" "$r2"
done

many="$("$kevo" script "$helper" many 0 "${files[@]}")"
read -r _ n ms per <<<"$many"
echo "compile_many: $n distinct kernels in $ms ms ($per ms each; pool of ${KEVO_COMPILE_JOBS:-min(nproc,8)})"
worst="$(printf '%s\n' "${warms[@]}" | sort -g | tail -1)"
verdict=$(awk -v w="$worst" 'BEGIN{print (w <= 80) ? "met" : "NOT met"}')
echo "target: NVRTC warm median <= 80 ms for recipe-sized kernels: $verdict (worst $worst ms)"
