#!/usr/bin/env bash
# kevo run --eval redis://... without a GPU: `kevo worker --redis` bridges over stand-in workers
# (tests/integration/fake_worker.py, real NVRTC compiles on the driver) through the Redis server
# of $KEVO_TEST_REDIS (database 7, flushed). Usage errors, a KernelBench problem refused (its
# PyTorch reference lives in one worker between requests), no worker alive, and one sweep
# through two Redis workers (both judging) giving the same evaluations, verdicts and order as
# one local worker. The fault cases are tests/c/test_evalredis.c's.
set -u
if [ -z "${KEVO_TEST_REDIS:-}" ]; then
  echo "SKIP: KEVO_TEST_REDIS is not set (scripts/test.sh starts a redis-server for it)" >&2; exit 77
fi
fail=0
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
recipe="$KEVO_SRC/tests/integration/run_fixtures/toyscale.yaml"
unset KEVO_EVALUATOR KEVO_FAULT KEVO_LLM CUDA_VISIBLE_DEVICES
export KEVO_WORKER="python3 $KEVO_SRC/tests/integration/fake_worker.py ok"
export KEVO_FAKE_EVAL_S=0.03
url="${KEVO_TEST_REDIS%/*}"
case $url in redis://*/*) ;; *) url="$KEVO_TEST_REDIS" ;; esac
url="${url%/}/7"
python3 - "$url" <<'PY' || { echo "FAIL: cannot flush $url"; exit 1; }
import socket, sys
hostport, db = sys.argv[1][len("redis://"):].split("/")
host, port = hostport.rsplit(":", 1)
s = socket.create_connection((host, int(port)))
s.sendall(b"*2\r\n$6\r\nSELECT\r\n$%d\r\n%s\r\n*1\r\n$7\r\nFLUSHDB\r\n" % (len(db), db.encode()))
data = b""
while data.count(b"\r\n") < 2:
    data += s.recv(100)
sys.exit(0 if data.startswith(b"+OK\r\n+OK") else 1)
PY
cd "$tmp"
out="$tmp/out.txt"
t() { # t NAME EXPECTED_RC CMD...
  local name=$1 want=$2; shift 2
  "$@" >"$out" 2>&1; local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, want $want"; sed 's/^/  | /' "$out"; fail=1
  else echo "ok   $name"; fi
}
has() { grep -q -- "$1" "$out" || { echo "FAIL: output lacks '$1'"; sed 's/^/  | /' "$out"; fail=1; }; }
gdump() { "$KEVO" script "$KEVO_SRC/tests/integration/gpus_dump.lua" "$1" "$2"; }

t "--eval takes a redis URL" 2 "$KEVO" run "$recipe" --eval http://x;         has "takes redis://"
t "--eval: no password in it" 2 "$KEVO" run "$recipe" --eval redis://:pw@h:1/0; has "eval-password-env"
t "--eval or --gpus" 2 "$KEVO" run "$recipe" --eval "$url" --gpus 0;          has "exclude each other"
t "--eval-password-env alone" 2 "$KEVO" run "$recipe" --eval-password-env X;  has "--eval is missing"
if "$KEVO" import "$KEVO_SRC/tests/kbench/relu.py" --description "$KEVO_SRC/tests/kbench/relu.json" \
    --out "$tmp/kb" >/dev/null 2>&1; then
  t "KernelBench problems stay local" 2 env KEVO_LLM_BASE_URL=http://127.0.0.1:9 \
    KEVO_LLM_KEY_ENV=KEVO_TEST_NO_SUCH_KEY "$KEVO" run "$tmp/kb/relu.yaml" --llm openai:m \
    --db kb.db --eval "$url"
  has "has a PyTorch reference (a KernelBench problem), which is not evaluated through Redis"
fi
t "no worker alive" 1 "$KEVO" run "$recipe" --db none.db --eval "$url"
has "no kevo worker for sm_90 is alive"; has "kevo worker --redis"

for g in 0 1; do
  "$KEVO" worker --redis "$url" --device "$g" -v 2>"$tmp/worker$g.log" &
  pids+=($!)
done
for g in 0 1; do
  for _ in $(seq 100); do grep -q " takes " "$tmp/worker$g.log" && break; sleep 0.1; done
done
t "one local worker" 0 "$KEVO" run "$recipe" --db one.db
t "two Redis workers" 0 "$KEVO" run "$recipe" --db redis.db --eval "$url"
has "(2 Redis workers, $url)"
gdump one.db 1 > one.txt
gdump redis.db 1 > redis.txt
grep -c "^batch" redis.txt | grep -qx 24 || { echo "FAIL: the sweep is not 24 evaluations"; cat redis.txt; fail=1; }
diff <(grep ^batch one.txt) <(grep ^batch redis.txt) > /dev/null \
  && echo "ok   through Redis: the same evaluations, verdicts and order as one local worker" \
  || { echo "FAIL: Redis differs from local"; diff one.txt redis.txt | head; fail=1; }
n0=$(grep -c "(evaluate): replied" "$tmp/worker0.log"); n1=$(grep -c "(evaluate): replied" "$tmp/worker1.log")
[ "$n0" -ge 1 ] && [ "$n1" -ge 1 ] \
  && echo "ok   both Redis workers judged ($n0 + $n1)" \
  || { echo "FAIL: Redis workers judged $n0 + $n1"; fail=1; }
# each result names the worker's GPU (HOST:N), as a local pool's name theirs
h=$(hostname)
grep -q "^gpu $h:0 " redis.txt && grep -q "^gpu $h:1 " redis.txt \
  && echo "ok   results name the Redis worker's GPU: $(grep ^gpu redis.txt | paste -sd' ')" \
  || { echo "FAIL: device.gpu of Redis results"; grep ^gpu redis.txt; fail=1; }

# kevo suite through Redis; one started on a local worker, killed between problems and resumed
# with --eval, gives the same searches (docs/suite.md: --gpus or --eval may change on a resume)
sdump() {
  "$KEVO" script <(cat <<'LUA'
local db = require("kevo.archive").open(arg[1], {readonly = true})
local json = require "kevo.json"
for _, r in ipairs(db:runs()) do
  local c = json.decode(r.config)
  if type(c.suite) == "table" then
    for _, cand in ipairs(db:candidates(r.id)) do
      print(c.suite.index, cand.knobs, db:evaluations(cand.id)[1].verdict)
    end
  end
end
LUA
) "$1" | sort -s -n -k1,1 # by problem (with --jobs their runs start in any order)
}
s2=("$recipe" "$recipe")
t "a suite through Redis" 0 "$KEVO" suite "${s2[@]}" --max-evals 6 --db sa.db --eval "$url"
has "suite 1 (done): 2 problems"
t "a local suite killed between problems" 137 env KEVO_FAULT=suite:1 "$KEVO" suite "${s2[@]}" \
  --max-evals 6 --db sb.db --gpus 0
t "resumed through Redis" 0 "$KEVO" suite --resume 1 --db sb.db --eval "$url"
has "suite 1 (done): 2 problems"
sdump sa.db > sa.txt; sdump sb.db > sb.txt
[ "$(wc -l < sa.txt)" = 12 ] && diff sa.txt sb.txt >/dev/null \
  && echo "ok   the suite through Redis, and resumed there from a local start: the same searches" \
  || { echo "FAIL: the suites differ"; diff sa.txt sb.txt | head; fail=1; }
# --jobs 2: the two problems at once, each a child kevo, the same searches and table
t "--jobs without --eval" 2 "$KEVO" suite "${s2[@]}" --jobs 2 --db sj0.db;  has "give --eval"
t "a suite with --jobs 2" 0 "$KEVO" suite "${s2[@]}" --max-evals 6 --db sc.db --eval "$url" \
  --jobs 2 --out "$tmp/jobs"
has "suite 1 (done): 2 problems"; has "2 problem(s) to search, 2 at a time"
sdump sc.db > sc.txt
diff sa.txt sc.txt >/dev/null && [ -s "$tmp/jobs/suite-1/problem-02.log" ] \
  && echo "ok   --jobs 2: the same searches as problems in turn, a log per problem" \
  || { echo "FAIL: --jobs 2 differs"; diff sa.txt sc.txt | head; ls "$tmp/jobs/suite-1"; fail=1; }
[ "$("$KEVO" script <(echo 'local db = require("kevo.archive").open(arg[1]); local n = 0
  for _, k in db:journal(1) do n = n + (k == "problem" and 1 or 0) end; print(n)') sc.db)" = 2 ] \
  || { echo "FAIL: --jobs 2 noted the problems other than once each"; fail=1; }
exit $fail
