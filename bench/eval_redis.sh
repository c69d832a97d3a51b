#!/usr/bin/env bash
# Benchmark (GPU host): judging throughput with local workers and through Redis on the same
# host, with 1 GPU and with 2, and Redis's overhead per job (docs/redis.md). A redis-server on
# loopback (the bundle's, $KEVO_REDIS_SERVER, or one on PATH) and `kevo worker --redis` per GPU
# are started here and stopped on the way out. The overhead per job is the driver's round trip
# less the time the worker's GPU process took (KEVO_REDIS_TRACE), median over the timed batch.
# usage: bench/eval_redis.sh [N] [RECIPE]   env: KEVO (binary or kevo-env), KEVO_SRC
set -u
src="${KEVO_SRC:-$(cd "$(dirname "$0")/.." && pwd)}"
kevo="${KEVO:-$src/build/kevo}"
n="${1:-24}"
recipe="${2:-$src/recipes/softmax.yaml}"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: bench/eval_redis.sh needs a GPU" >&2; exit 77
fi
server="${KEVO_REDIS_SERVER:-}"
[ -z "$server" ] && [ -x "$(dirname "$kevo")/redis-server" ] && server="$(dirname "$kevo")/redis-server"
[ -z "$server" ] && server="$(command -v redis-server || true)"
[ -n "$server" ] || { echo "SKIPPED: no redis-server (the GPU bundle carries one)" >&2; exit 77; }
ngpu=$(nvidia-smi -L | wc -l)
work=$(mktemp -d)
pids=()
cleanup() { # the workers before Redis: a worker whose Redis went away waits for it
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill "${pids[i]}" 2>/dev/null
    wait "${pids[i]}" 2>/dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$server" --port "$port" --bind 127.0.0.1 --dir "$work" --save "" --appendonly no \
  --logfile "$work/redis.log" &
pids+=($!)
url="redis://127.0.0.1:$port/0"
sleep 0.3

run() { # run LABEL ARG: one configuration, its EVAL_REDIS line into $work/results
  "$kevo" script "$src/bench/eval_redis.lua" "$recipe" "$n" "$2" 2>"$work/$1.err" |
    tee -a "$work/results"
  [ "${PIPESTATUS[0]}" = 0 ] || { echo "eval_redis: $1 failed:" >&2; tail -5 "$work/$1.err" >&2; }
}
worker() { # worker GPU: a Redis worker for that GPU, registered before it returns
  "$kevo" worker --redis "$url" --device "$1" 2>>"$work/worker$1.log" &
  pids+=($!)
  for _ in $(seq 100); do grep -q "takes" "$work/worker$1.log" 2>/dev/null && return; sleep 0.1; done
  echo "eval_redis: the worker for GPU $1 did not start:" >&2; cat "$work/worker$1.log" >&2
}

run local1 gpus=0
[ "$ngpu" -ge 2 ] && run local2 gpus=0,1
worker 0
KEVO_REDIS_TRACE="$work/trace1" run redis1 "eval=$url"
if [ "$ngpu" -ge 2 ]; then
  worker 1
  KEVO_REDIS_TRACE="$work/trace2" run redis2 "eval=$url"
fi

python3 - "$work" "$n" <<'PY'
import os, statistics, sys
work, n = sys.argv[1], int(sys.argv[2])
rows = {}
for line in open(os.path.join(work, "results")):
    kv = dict(p.split("=", 1) for p in line.split()[1:])
    rows[kv["label"] + ("2" if kv["workers"] == "2" else "1")] = kv
def rate(k):
    return float(rows[k]["per_s"]) if k in rows else None
print("\njudging throughput, %d softmax candidates (compiles cached, racing off)" % n)
print("%-26s %10s %10s" % ("", "1 GPU", "2 GPUs"))
for name, a, b in (("local workers (/s)", "local:01", "local:0,12"), ("through Redis (/s)", "redis1", "redis2")):
    f = lambda v: "%.2f" % v if v else "-"
    print("%-26s %10s %10s" % (name, f(rate(a)), f(rate(b))))
for a, b, what in (("local:01", "local:0,12", "local"), ("redis1", "redis2", "Redis")):
    if rate(a) and rate(b):
        print("scaling 1 -> 2 GPUs, %s: %.2fx" % (what, rate(b) / rate(a)))
for t in ("trace1", "trace2"):
    p = os.path.join(work, t)
    if not os.path.exists(p):
        continue
    over = [float(l.split()[0]) - float(l.split()[1]) for l in open(p).read().split("\n")[-n - 1:] if l.strip()]
    if over:
        print("Redis overhead per job (%s, round trip - worker time): median %.2f ms, p90 %.2f ms, n=%d"
              % ("1 worker" if t == "trace1" else "2 workers", statistics.median(over),
                 sorted(over)[int(0.9 * (len(over) - 1))], len(over)))
for k, v in sorted(rows.items()):
    print("verdicts %-10s %s" % (k, v["verdicts"]))
PY
