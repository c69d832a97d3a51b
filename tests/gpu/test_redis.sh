#!/usr/bin/env bash
# Needs a GPU and a redis-server (the GPU bundle's bin/redis-server, $KEVO_REDIS_SERVER or one on
# PATH). Starts Redis on loopback and `kevo worker --redis` on every GPU of the host, then judges
# the seeds of the ten first packaged recipes through Redis and through a local worker on GPU 0:
# the verdicts must agree and be ok, and with two GPUs both Redis workers must have taken jobs.
# KEVO_REDIS_RECIPES="softmax gelu" judges only those, "all" every recipe.
set -u
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: gpu/test_redis needs a GPU" >&2; exit 77
fi
server="${KEVO_REDIS_SERVER:-}"
[ -z "$server" ] && [ -x "$(dirname "$KEVO")/redis-server" ] && server="$(dirname "$KEVO")/redis-server"
[ -z "$server" ] && server="$(command -v redis-server || true)"
[ -n "$server" ] || { echo "SKIPPED: gpu/test_redis needs a redis-server (the GPU bundle carries one)" >&2; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() { # the workers before Redis: a worker whose Redis went away waits for it
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill "${pids[i]}" 2>/dev/null
    wait "${pids[i]}" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$server" --port "$port" --bind 127.0.0.1 --dir "$tmp" --save "" --appendonly no --logfile "$tmp/redis.log" &
pids+=($!)
url="redis://127.0.0.1:$port/0"
sleep 0.3
ngpu=$(nvidia-smi -L | wc -l)
[ "$ngpu" -gt 2 ] && ngpu=2
for ((g = 0; g < ngpu; g++)); do
  "$KEVO" worker --redis "$url" --device "$g" -v 2>"$tmp/worker$g.log" &
  pids+=($!)
done
for ((g = 0; g < ngpu; g++)); do
  for _ in $(seq 150); do grep -q " takes " "$tmp/worker$g.log" && break; sleep 0.1; done
  grep " takes " "$tmp/worker$g.log" || { echo "FAIL: the worker for GPU $g did not start:"; cat "$tmp/worker$g.log"; exit 1; }
done
# the ten first packaged recipes (issue 17's "done when"); KEVO_REDIS_RECIPES=all for every one
names=${KEVO_REDIS_RECIPES:-"cross_entropy gelu layernorm log_softmax matmul_bf16 rmsnorm row_sum softmax transpose vector_add"}
recipes=()
if [ "$names" = all ]; then recipes=("$KEVO_SRC"/recipes/*.yaml); else
  for r in $names; do recipes+=("$KEVO_SRC/recipes/$r.yaml"); done
fi
half=$(( (${#recipes[@]} + 1) / 2 ))
# two drivers at once, so both GPUs have work
"$KEVO" script "$KEVO_SRC/tests/gpu/redis_recipes.lua" "$url" 0 "${recipes[@]:0:$half}" >"$tmp/a.out" 2>&1 &
a=$!
"$KEVO" script "$KEVO_SRC/tests/gpu/redis_recipes.lua" "$url" 0 "${recipes[@]:$half}" >"$tmp/b.out" 2>&1
rb=$?
wait "$a"
ra=$?
cat "$tmp/a.out" "$tmp/b.out"
fail=0
[ "$ra" = 0 ] && [ "$rb" = 0 ] || fail=1
for ((g = 0; g < ngpu; g++)); do
  jobs=$(grep -c "(evaluate): replied" "$tmp/worker$g.log")
  echo "worker on GPU $g answered $jobs jobs"
  [ "$jobs" -gt 0 ] || { echo "FAIL: the worker on GPU $g took no job"; fail=1; }
done
[ "$fail" = 0 ] && echo "PASS: ${#recipes[@]} recipes through Redis on $ngpu GPU(s), same verdicts as a local worker"
exit "$fail"
