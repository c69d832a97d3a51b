#!/usr/bin/env bash
# Evaluation throughput with one GPU and with two on the same recipe (kevo run --gpus;
# bench/eval_gpus.lua): prints both rates and their ratio (target >= 1.8x on a two-GPU host).
# usage: bench/eval_gpus.sh [RECIPE] [N] [GPUS]   (default softmax, 16 candidates, GPUs 0,1;
#        KEVO=path/to/kevo, default build/kevo)
set -euo pipefail
cd "$(dirname "$0")/.."
kevo=${KEVO:-build/kevo}
recipe=${1:-recipes/softmax.yaml}
n=${2:-16}
gpus=${3:-0,1}
set +e
"$kevo" script bench/eval_gpus.lua "$recipe" "$n" "${gpus%%,*}" "$gpus"
rc=$?
set -e
[ "$rc" = 77 ] && { echo "eval_gpus: no GPU here" >&2; exit 77; }
exit "$rc"
