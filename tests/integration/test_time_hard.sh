#!/usr/bin/env bash
# --time is hard against kevo's own work under way at the deadline.
# - Compiles: a batch whose NVRTC compiles take seconds, handed over just before the deadline,
#   is cut at --time (each compile gets what is left of the run's time, and one not begun then
#   is not begun at all), the run ends within 2 s of its budget with what it found kept, and
#   the cut batch is in the journal: a replay, and a resume after the batch's commit, give the
#   strategy the same batch. Real NVRTC, the stand-in worker (fake_worker.py). The Triton side
#   is tests/lua/test_compile_deadline.lua.
# - A profile: ncu (the stand-in worker's, 60 s) is given what is left of the run's time.
# - An LLM answer: a proposal whose reply the (loopback) server holds for 60 s is given up at
#   --time, the run ends on [time] with the seeds' best, and replays to the same stop.
set -u
fail=0
tmp=$(mktemp -d)
srv_pid=
trap '[ -n "$srv_pid" ] && kill $srv_pid 2>/dev/null; rm -rf "$tmp"' EXIT
recipe="$KEVO_SRC/tests/integration/run_fixtures/slowcompile.yaml"
unset KEVO_EVALUATOR KEVO_FAULT KEVO_LLM KEVO_LLM_BASE_URL CUDA_VISIBLE_DEVICES
export KEVO_WORKER="python3 $KEVO_SRC/tests/integration/fake_worker.py ok"
export KEVO_FAKE_EVAL_S=0.03 KEVO_DB="$tmp/kevo.db" KEVO_CACHE="$tmp/cache"
cd "$tmp"
out="$tmp/out.txt"
say_fail() { echo "FAIL: $*"; fail=1; }
t() { # t NAME EXPECTED_RC CMD...
  local name=$1 want=$2; shift 2
  "$@" >"$out" 2>&1; local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, want $want"; sed 's/^/  | /' "$out" | tail -30; fail=1
  else echo "ok   $name"; fi
}
has() { grep -q -- "$1" "$out" || { say_fail "output lacks '$1'"; sed 's/^/  | /' "$out" | tail -30; }; }
last_run() { "$KEVO" script <(echo 'local r = require("kevo.archive").open(nil, {readonly = true}):runs(); print(#r > 0 and r[#r].id or 0)'); }

# the seed (fast) is judged; then four candidates that each take NVRTC 40-80 s, then the same
# batch again (a stop by then)
cat > slowbatch.lua <<'LUA'
return {name = "slowbatch", run = function(ctx)
  local e = ctx:evaluate(ctx:seed_candidates())[1]
  assert(e.ok, e.message)
  local batch = {}
  for _, b in ipairs{128, 256, 512, 1024} do
    batch[#batch + 1] = ctx:candidate(e, {BLOCK = b, SLOW = 12}, "slow")
  end
  local got, stop = ctx:evaluate(batch)
  local v = {}
  for i, r in ipairs(got) do v[i] = r.verdict end
  ctx:log("BATCH %s; stop %s; best %s", table.concat(v, " "), stop and stop.reason or "none",
          ctx.best and ctx.best.verdict or "none")
  ctx:log("WHY %s", got[1].message)
  ctx:evaluate(batch)
  ctx:log("NOT REACHED")
end}
LUA
args=(run "$recipe" --strategy ./slowbatch.lua --time 3s)
start=$(date +%s.%N)
t "--time with NVRTC compiles under way" 0 "$KEVO" "${args[@]}"
took=$(echo "$(date +%s.%N) - $start" | bc)
r=$(last_run); has "stopped: --time budget spent"; has "1 verified"
grep -q "NOT REACHED" "$out" && say_fail "the strategy went on past its stop"
grep '^BATCH' "$out" > batch_live.txt
grep -q "^BATCH not_evaluated not_evaluated not_evaluated not_evaluated; stop time; best ok$" batch_live.txt \
  && echo "ok   the slow batch: every candidate not_evaluated, the seed kept as the best" \
  || say_fail "the slow batch: $(cat batch_live.txt)"
has "WHY not evaluated: the run's time ran out (--time 3 s) while it was being compiled"
secs=$(sed -n 's/^run [0-9]* done: .*, \([0-9.]*\) s \[time\]$/\1/p' "$out")
awk -v s="${secs:-99}" -v w="$took" 'BEGIN { exit !(s <= 5 && w <= 6) }' \
  && echo "ok   the run ended at $secs s of a 3 s budget (the command: ${took} s)" \
  || say_fail "the run took ${secs:-?} s of run time (the command ${took} s) on a 3 s budget"
t "replay of the cut batch" 0 "$KEVO" replay "$r"; has "no divergence"; has "stopped: time"
grep '^ *BATCH' "$out" | sed 's/^ *//' | cmp -s - batch_live.txt && echo "ok   the replay's batch is the run's" ||
  say_fail "the replay's batch differs: $(grep BATCH "$out")"

# killed right after the cut batch's commit, then resumed: the batch comes back from the journal
t "killed after the cut batch (killed)" 137 env KEVO_FAULT=committed:2 "$KEVO" "${args[@]}"
r=$(last_run)
t "resumed after the cut batch" 0 "$KEVO" run --resume "$r"
grep '^BATCH' "$out" | cmp -s - batch_live.txt && echo "ok   the resume read the cut batch back" ||
  say_fail "the resume's batch: $(grep BATCH "$out")"
t "replay of the resumed run" 0 "$KEVO" replay "$r"; has "no divergence"
# --- a profile (ncu) under way at the deadline: the worker is given what is left ----------------
cat > slowprofile.lua <<'LUA'
return {name = "slowprofile", run = function(ctx)
  ctx:evaluate(ctx:seed_candidates())
  local p = ctx:profile(ctx.best)[1]
  ctx:log("PROFILE %s %s", tostring(p.ok), tostring(p.reason))
  ctx:evaluate(ctx:seed_candidates(1))
  ctx:profile(ctx:top(2))
  ctx:log("NOT REACHED")
end}
LUA
start=$(date +%s.%N)
t "--time with a profile under way" 0 env KEVO_FAKE_PROFILE_S=60 "$KEVO" run "$recipe" \
  --strategy ./slowprofile.lua --time 3s
took=$(echo "$(date +%s.%N) - $start" | bc)
has "PROFILE false timeout"; has "stopped: --time budget spent"
grep -q "NOT REACHED" "$out" && say_fail "the strategy went on past its stop"
secs=$(sed -n 's/^run [0-9]* done: .*, \([0-9.]*\) s \[time\]$/\1/p' "$out")
awk -v s="${secs:-99}" -v w="$took" 'BEGIN { exit !(s <= 5 && w <= 6) }' \
  && echo "ok   the run ended at $secs s of a 3 s budget, its profile cut (the command: ${took} s)" \
  || say_fail "the run took ${secs:-?} s of run time (the command ${took} s) on a 3 s budget"
r=$(last_run)
t "replay of the run whose profile was cut" 0 "$KEVO" replay "$r"; has "no divergence"

# --- an LLM answer still to come at the deadline ---------------------------------------------
: > llm.log; echo "hold *" > llm.ctl
python3 "$KEVO_SRC/tests/integration/resume_llm_server.py" llm.log llm.ctl > port.txt &
srv_pid=$!
for _ in $(seq 50); do grep -q PORT port.txt 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/^PORT //p' port.txt)
printf 'llm.base_url = http://127.0.0.1:%s/v1\nllm.log = false\n' "$port" > kevo.conf
largs=(run "$KEVO_SRC/tests/integration/run_fixtures/toyscale.yaml" --llm vllm:rewriter
       --strategy greedy --time 3s)
start=$(date +%s.%N)
t "--time with an LLM answer held" 0 env KEVO_EVALUATOR="model:$KEVO_SRC/examples/cost_model.lua" \
  "$KEVO" "${largs[@]}"
took=$(echo "$(date +%s.%N) - $start" | bc)
r=$(last_run); has "stopped: --time budget spent while the model was answering"
grep -q "^held" llm.log || say_fail "the server held no request"
secs=$(sed -n 's/^run [0-9]* done: .*, \([0-9.]*\) s \[time\]$/\1/p' "$out")
awk -v s="${secs:-99}" -v w="$took" 'BEGIN { exit !(s <= 5 && w <= 6) }' \
  && echo "ok   the run ended at $secs s of a 3 s budget, the model's answer given up (the command: ${took} s)" \
  || say_fail "the run took ${secs:-?} s of run time (the command ${took} s) on a 3 s budget"
t "replay of the run cut while the model answered" 0 "$KEVO" replay "$r"
has "no divergence"; has "stopped: time"
[ $fail = 0 ] && echo "time_hard: all passed"
exit $fail
