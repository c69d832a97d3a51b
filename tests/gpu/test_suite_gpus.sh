#!/usr/bin/env bash
# GPU test: a suite of the ten packaged recipes (the first ten, issue 17's "done when") gives the
# same verified results on one GPU, with --gpus all (two GPUs), and through Redis with one
# `kevo worker --redis` per GPU (redis-server: the GPU bundle's, $KEVO_REDIS_SERVER or on PATH;
# without one that part is skipped loudly).
# "The same verified results" is docs/resume.md "Many GPUs": autotune samples each seed's knob
# space at random (--set method=random: the candidates do not depend on timings), so every
# suite must propose the same candidates in the same order, each with the same verdict (a
# verdict that judges a time, timeout or implausible, may differ and is noted), the same
# fast_0, and best speed-ups within a factor of 1.5 of one GPU's (measurements, not equal). The
# two-GPU suites must have measured on both GPUs (device.gpu). Printed: each suite's wall time,
# the workers' own time over its evaluations and how busy that kept the GPUs (docs/suite.md).
# On a host with one GPU: --gpus all is skipped (loudly), and Redis gets two workers on that
# GPU, so a suite's jobs are still spread over two workers (both must have judged); sharing the
# GPU, their timings are not compared. Exits 77 (skipped) without a GPU.
# env: KEVO, KEVO_SRC; SUITE_EVALS (evaluations per problem, default 4)
set -u
here="$(cd "$(dirname "$0")" && pwd)"
src="${KEVO_SRC:-$here/../..}"
kevo="${KEVO:?KEVO must name kevo}"
n=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU ")
if [ "${n:-0}" -lt 1 ]; then
  echo "SKIPPED: test_suite_gpus needs a GPU and there is none here" >&2
  exit 77
fi
server="${KEVO_REDIS_SERVER:-}"
[ -z "$server" ] && [ -x "$(dirname "$kevo")/redis-server" ] && server="$(dirname "$kevo")/redis-server"
[ -z "$server" ] && server="$(command -v redis-server || true)"
evals=${SUITE_EVALS:-4}
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
cd "$tmp" || exit 1
unset KEVO_EVALUATOR KEVO_WORKER KEVO_FAULT KEVO_LLM
fail=0
# the ten recipes packaged first (README "Packaged recipes"), not the LLM operators added later
recipes=()
for r in vector_add softmax gelu log_softmax layernorm rmsnorm row_sum transpose cross_entropy \
  matmul_bf16; do
  recipes+=("$src/recipes/$r.yaml")
done
opts=(--max-evals "$evals" --set method=random --set batch=4 --seed 7)
suite() { # suite NAME OPTION...: the suite of the ten with those options; NAME.{txt,json,dump}
  local name=$1 t0=$SECONDS rc
  shift
  "$kevo" suite "${recipes[@]}" "${opts[@]}" "$@" --db "$name.db" --json "$name.json" \
    >"$name.txt" 2>&1
  rc=$?
  echo "$((SECONDS - t0))" >"$name.wall"
  "$kevo" script "$here/suite_dump.lua" "$name.db" >"$name.dump" 2>&1
  echo "$name ($*): exit $rc, $((SECONDS - t0)) s"
  [ $rc = 0 ] || { echo "FAIL: the suite $name failed"; tail -20 "$name.txt"; fail=1; }
}
suite one --gpus 0
modes=()
if [ "$n" -ge 2 ]; then
  suite two --gpus all
  sed -n '/^suite 1 (/,$p' two.txt
  modes+=(two)
  devices=(0 1)
else
  sed -n '/^suite 1 (/,$p' one.txt
  echo "SKIPPED (part): --gpus all needs two GPUs and there is one: Redis gets two workers on GPU 0" >&2
  devices=(0 0)
fi
if [ -n "$server" ]; then
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$server" --port "$port" --bind 127.0.0.1 --dir "$tmp" --save "" --appendonly no \
    --logfile "$tmp/redis.log" &
  pids+=($!)
  url="redis://127.0.0.1:$port/0"
  sleep 0.3
  for w in 0 1; do
    "$kevo" worker --redis "$url" --device "${devices[w]}" -v 2>"$tmp/worker$w.log" &
    pids+=($!)
  done
  for w in 0 1; do
    for _ in $(seq 150); do grep -q " takes " "$tmp/worker$w.log" && break; sleep 0.1; done
    grep " takes " "$tmp/worker$w.log" || { echo "FAIL: redis worker $w did not start:"; cat "$tmp/worker$w.log"; fail=1; }
  done
  suite redis --eval "$url"
  for w in 0 1; do
    echo "redis worker $w (GPU ${devices[w]}) answered $(grep -c '(evaluate): replied' "$tmp/worker$w.log") jobs"
  done
  modes+=(redis)
else
  echo "SKIPPED (part): no redis-server (the GPU bundle carries one): the suite through Redis did not run" >&2
fi

if [ ${#modes[@]} = 0 ]; then
  echo "SKIPPED: test_suite_gpus has nothing to compare one GPU with (one GPU, no redis-server)" >&2
  exit 77
fi
[ "$(grep -c '^eval ' one.dump)" -ge 10 ] || { echo "FAIL: the one-GPU suite evaluated almost nothing"; cat one.dump; fail=1; }
for m in "${modes[@]}"; do
  python3 - one "$m" "$n" <<'PY' || fail=1
import json, math, sys
a, b, ngpu = sys.argv[1], sys.argv[2], int(sys.argv[3])
shared = ngpu < 2  # two Redis workers on one GPU: their timings are not compared
def dump(name):
    ev, gpus, extra = [], {}, {"workers": {}}
    for line in open(name + ".dump"):
        w = line.split()
        if w[0] == "eval": ev.append(w[1:])
        elif w[0] == "gpu": gpus[w[1]] = int(w[2])
        elif w[0] == "worker": extra["workers"][w[1]] = int(w[2])
        elif w[0] == "worker_s": extra["worker_s"] = float(w[1])
        elif w[0] == "why": extra.setdefault("why", {})[tuple(w[1:3])] = " ".join(w[3:])
    return ev, gpus, extra
(ea, ga, xa), (eb, gb, xb) = dump(a), dump(b)
timed = {"ok", "timeout", "implausible"}
bad = 0
if len(ea) != len(eb):
    print("FAIL %s: %d evaluations on one GPU, %d here" % (b, len(ea), len(eb))); bad += 1
for x, y in zip(ea, eb):
    if x == y: continue
    if x[:-1] == y[:-1] and {x[-1], y[-1]} <= timed:
        print("note %s: a timing verdict differs: %s / %s" % (b, " ".join(x), y[-1]))
    else:
        print("FAIL %s: %s  vs  %s" % (b, " ".join(x), " ".join(y))); bad += 1
        for side, xs in ((a, xa), (b, xb)):
            why = xs.get("why", {}).get(tuple(x[:2]))
            if why: print("  %s said: %s" % (side, why))
if not bad:
    print("ok   %s: the same candidates with the same verdicts as one GPU (%d evaluations)" % (b, len(ea)))
if shared:
    wk = xb["workers"]
    if len(wk) < 2:
        print("FAIL %s: judged by %d worker(s): %s" % (b, len(wk), wk)); bad += 1
    else:
        print("ok   %s: judged by %s" % (b, ", ".join("%s (%d)" % kv for kv in sorted(wk.items()))))
elif len(gb) < 2:
    print("FAIL %s: measured on %d GPU(s): %s" % (b, len(gb), gb)); bad += 1
else:
    print("ok   %s: measured on %s" % (b, ", ".join("%s (%d)" % kv for kv in sorted(gb.items()))))
ja, jb = (json.load(open(p + ".json")) for p in (a, b))
print("%-16s %10s %10s" % ("problem", "1 GPU", b))
worst = 1.0
for x, y in zip(ja["problems"], jb["problems"]):
    s = lambda p: "%.2fx" % p["speedup"] if p.get("speedup") else "-"
    print("%-16s %10s %10s" % (x.get("name") or x["path"], s(x), s(y)))
    if x.get("speedup") and y.get("speedup"):
        worst = max(worst, x["speedup"] / y["speedup"], y["speedup"] / x["speedup"])
    elif bool(x.get("speedup")) != bool(y.get("speedup")):
        print("FAIL %s: a best speed-up on one side only" % b); bad += 1
print("%s: best speed-ups within %.2fx of one GPU's%s" % (b, worst,
      " (two workers sharing one GPU: not checked)" if shared else ""))
if worst > 1.5 and not shared:
    print("FAIL %s: a best speed-up differs by more than 1.5x" % b); bad += 1
fa, fb = ja["fast_p"]["reference"]["fast_0"], jb["fast_p"]["reference"]["fast_0"]
print("fast_0: one GPU %d/%d, %s %d/%d" % (fa["n"], fa["of"], b, fb["n"], fb["of"]))
if fa["n"] != fb["n"]: bad += 1
for name, x, g in ((a, xa, 1), (b, xb, min(ngpu, 2))):  # GPUs, not workers
    wall = float(open(name + ".wall").read())
    print("%s: %.1f s of the workers' own time in %.0f s of wall on %d GPU(s): %.0f%% busy"
          % (name, x.get("worker_s", 0), wall, g, 100 * x.get("worker_s", 0) / max(1, wall * g)))
sys.exit(1 if bad else 0)
PY
done
echo "per problem (s): $(paste -sd' ' <(grep '^problem ' one.dump | awk '{print $3 "=" $4}'))"
[ $fail = 0 ] && echo "suite on one GPU and ${modes[*]}: all passed"
exit $fail
