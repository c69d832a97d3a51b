#!/usr/bin/env bash
# kevo run --resume and kevo replay (docs/resume.md), on the synthetic cost model and a real
# loopback LLM server (resume_llm_server.py: run_llm_server.py with a request log and a hold).
# A reference run goes uninterrupted; the same run is killed with SIGKILL at each point where a
# kill must lose nothing (after an evaluation, inside a batch's write, after it, during an
# evaluation, while an LLM reply is awaited, once a reply is stored, at random moments of a
# tight loop), resumed, and its archive compared with the reference: same candidates, parents,
# verdicts, best. The LLM server's log shows no reply that had been stored asked for again.
# Then: a changed strategy stops a resume with the divergence report; kevo replay with no
# evaluator and no API key gives the run's best and step count, and reports a divergence.
set -u
fail=0
tmp=$(mktemp -d)
srv_pid=
bg_pid=
trap '[ -n "$srv_pid" ] && kill $srv_pid 2>/dev/null; [ -n "$bg_pid" ] && kill -9 $bg_pid 2>/dev/null; rm -rf "$tmp"' EXIT
fix="$KEVO_SRC/tests/integration/run_fixtures"
recipe="$fix/toyscale.yaml"
export KEVO_EVALUATOR="model:$KEVO_SRC/examples/cost_model.lua"
export KEVO_DB="$tmp/kevo.db"
unset KEVO_LLM KEVO_LLM_BASE_URL KEVO_LLM_KEY_ENV KEVO_FAULT KEVO_MODEL_DELAY
cd "$tmp"
if ! "$KEVO" script <(echo 'require "kevo.archive"; require "kevo.recipe"; require "kevo.llm"') 2>/dev/null; then
  echo "SKIP: this build lacks kevo.archive, kevo.recipe or kevo.llm, which this test needs" >&2; exit 77
fi
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
dump() { "$KEVO" script "$KEVO_SRC/tests/integration/resume_dump.lua" "$KEVO_DB" "$1"; }
journal_n() { "$KEVO" script <(echo "print(require('kevo.archive').open(nil, {readonly = true}):journal_count($1))"); }
same() { # same NAME REF_DUMP RUN: the run's archive equals the reference's
  dump "$3" > got.txt 2>&1
  if cmp -s "$2" got.txt; then echo "ok   $1: same candidates, verdicts, best"
  else say_fail "$1: run $3 differs from the reference"; diff "$2" got.txt | head -8; fi
}
# killed NAME EXPECTED_RC CMD...: a run that must die of SIGKILL (137) part way
killed() { local name=$1; shift; t "$name (killed)" 137 "$@"; }
resume() { t "$1 (resumed)" 0 "$KEVO" run --resume "$2"; }

# --- without an LLM: composition beam+autotune (phases, shares) ------------------------------
args=(run "$recipe" --strategy beam+autotune --max-evals 40 --set beam.rounds=100)
t "reference run" 0 "$KEVO" "${args[@]}"
ref=$(last_run); dump "$ref" > ref.txt
grep -q "^status done$" ref.txt || say_fail "reference not done"

for point in evaluated:3 batch-write:2 committed:4 evaluated:1; do
  killed "kill at $point" env KEVO_FAULT=$point "$KEVO" "${args[@]}"
  r=$(last_run)
  dump "$r" | grep -q "^status running$" || say_fail "$point: run $r not left running"
  resume "$point" "$r"; has "resumed: "
  same "$point" ref.txt "$r"
done

# killed twice, resumed twice
killed "kill once" env KEVO_FAULT=committed:2 "$KEVO" "${args[@]}"
r=$(last_run)
killed "kill the resume" env KEVO_FAULT=evaluated:2 "$KEVO" run --resume "$r"
resume "twice" "$r"
same "killed twice" ref.txt "$r"

# a real kill -9 during an evaluation (the model takes 0.2 s per candidate)
KEVO_MODEL_DELAY=0.2 "$KEVO" "${args[@]}" > bg.txt 2>&1 &
bg_pid=$!
sleep 1.5
kill -9 $bg_pid; wait $bg_pid 2>/dev/null; bg_pid=
r=$(last_run)
resume "kill -9 during an evaluation" "$r"
same "kill -9 during an evaluation" ref.txt "$r"

# kill -9 at random moments of a run of many fast evaluations (database writes all the time)
cat > busy.lua <<'LUA'
return {name = "busy", run = function(ctx)
  local rng, i = ctx.rng:fork("busy"), 0
  while true do
    local batch = {}
    for _ = 1, rng:int(1, 3) do
      i = i + 1
      local base = ctx.best or ctx.seeds[1]
      local c = ctx:candidate(base, ctx:random_knobs(ctx.seeds[1].space, rng), "busy")
      c.source = c.source:gsub("\n// v%d+\n$", "") .. "\n// v" .. i .. "\n"
      batch[#batch + 1] = c
    end
    ctx:evaluate(batch)
  end
end}
LUA
args2=(run "$recipe" --strategy ./busy.lua --max-evals 2000)
t "reference run (busy)" 0 "$KEVO" "${args2[@]}"
ref2=$(last_run); dump "$ref2" > ref2.txt
for i in 1 2 3 4; do
  before=$(last_run)
  "$KEVO" "${args2[@]}" > bg.txt 2>&1 &
  bg_pid=$!
  sleep "0.$((RANDOM % 5 + 1))$((RANDOM % 10))"
  kill -9 $bg_pid 2>/dev/null; wait $bg_pid 2>/dev/null; bg_pid=
  r=$(last_run)
  if [ "$r" = "$before" ]; then echo "ok   random kill $i: before the run began"; continue; fi
  at=$(journal_n "$r")
  "$KEVO" run --resume "$r" > "$out" 2>&1 || { say_fail "random kill $i: resume failed"; tail -5 "$out"; }
  same "random kill $i (killed after $at of $(journal_n "$ref2") entries)" ref2.txt "$r"
done

# Ctrl-C, then resume: the run goes on past its 'interrupted' stop
KEVO_MODEL_DELAY=0.1 "$KEVO" "${args[@]}" > bg.txt 2>&1 &
bg_pid=$!
sleep 1.2
kill -INT $bg_pid; wait $bg_pid; bg_pid=
r=$(last_run)
dump "$r" | grep -q "^status killed$" || say_fail "Ctrl-C: run $r not killed"
resume "Ctrl-C" "$r"
same "Ctrl-C then resume" ref.txt "$r"
t "replay of a resumed run" 0 "$KEVO" replay "$r"; has "no divergence"

# --- divergence: the strategy file changed between the kill and the resume --------------------
cat > mine.lua <<'LUA'
return {name = "mine", run = function(ctx)
  local s = ctx.seeds[1]
  for i, b in ipairs({32, 64, 128, 256, 512, 1024}) do
    ctx:evaluate({ctx:candidate(s, {BLOCK = b, VEC = 1}, "mine")})
  end
end}
LUA
killed "own strategy" env KEVO_FAULT=committed:4 "$KEVO" run "$recipe" --strategy ./mine.lua
r=$(last_run)
sed -i 's/{32, 64, 128, 256/{32, 64, 100, 256/' mine.lua
t "changed strategy: resume refused" 1 "$KEVO" run --resume "$r"
has "diverges from its journal at seq 3"; has "BLOCK=100"; has "left as it was"
dump "$r" | grep -q "^status running$" && [ "$(journal_n "$r")" = 4 ] \
  && echo "ok   the diverged resume wrote nothing" || say_fail "the diverged resume changed run $r"
sed -i 's/{32, 64, 100, 256/{32, 64, 128, 256/' mine.lua
resume "strategy restored" "$r"
dump "$r" | grep -c " mine " | grep -q "^6$" || say_fail "restored strategy: not 6 candidates"

t "usage: --resume with --strategy" 2 "$KEVO" run --resume "$r" --strategy beam; has "drop --strategy"
t "usage: no such run" 2 "$KEVO" run --resume 9999;                             has "no run 9999"
t "usage: another evaluator" 2 env KEVO_EVALUATOR=model:./other.lua "$KEVO" run --resume "$r"
has "mix"

# --- with an LLM: a real loopback server -----------------------------------------------------
log="$tmp/llm.log"; ctl="$tmp/llm.ctl"; : > "$log"
python3 "$KEVO_SRC/tests/integration/resume_llm_server.py" "$log" "$ctl" > port.txt &
srv_pid=$!
for _ in $(seq 50); do grep -q PORT port.txt 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/^PORT //p' port.txt)
[ -n "$port" ] || { echo "FAIL: the loopback server did not start"; exit 1; }
printf 'llm.base_url = http://127.0.0.1:%s/v1\nllm.native_n = true\nllm.log = false\n' "$port" > kevo.conf
largs=(run "$recipe" --llm vllm:rewriter --strategy greedy --max-evals 16)
t "LLM reference run" 0 "$KEVO" "${largs[@]}"
lref=$(last_run); dump "$lref" > lref.txt
best_line=$(grep "^best: candidate" "$out")
grep "^sent" "$log" | sort > sent_ref.txt
[ "$(wc -l < sent_ref.txt)" -ge 4 ] || say_fail "the LLM reference run asked fewer than 4 times"

# a reply stored in llm_calls, the kill before its journal entry: the resume must not ask again
: > "$log"
killed "LLM reply stored" env KEVO_FAULT=proposed:3 "$KEVO" "${largs[@]}"
r=$(last_run)
resume "LLM reply stored" "$r"
same "LLM reply stored" lref.txt "$r"
grep "^sent" "$log" | sort > sent.txt
if cmp -s sent_ref.txt sent.txt; then echo "ok   no stored reply asked for twice"
else say_fail "LLM requests differ from the reference (a paid call repeated?)"; diff sent_ref.txt sent.txt | head -5; fi

# kill -9 while the server holds a reply: that one call is redone, no other
: > "$log"
held=$(awk 'NR==3 {print $2}' sent_ref.txt)
echo "hold $held" > "$ctl"
"$KEVO" "${largs[@]}" > bg.txt 2>&1 &
bg_pid=$!
for _ in $(seq 100); do grep -q "^held" "$log" && break; sleep 0.1; done
grep -q "^held" "$log" || say_fail "the held request never came"
kill -9 $bg_pid; wait $bg_pid 2>/dev/null; bg_pid=
rm -f "$ctl"
r=$(last_run)
resume "kill -9 during an LLM call" "$r"
same "kill -9 during an LLM call" lref.txt "$r"
dups=$(grep "^sent" "$log" | sort | uniq -d | wc -l)
[ "$dups" = 0 ] && echo "ok   no answered LLM request asked again" || say_fail "$dups answered request(s) asked again"
[ "$(grep -c "^recv $held" "$log")" = 2 ] && echo "ok   the unanswered call was redone" \
  || say_fail "the held call was not redone once"

# --- replay: no evaluator, no API key, no server ---------------------------------------------
kill $srv_pid; wait $srv_pid 2>/dev/null; srv_pid=
n=$(journal_n "$lref")
t "replay without GPU or key" 0 env -u KEVO_EVALUATOR KEVO_WORKER=/bin/false OPENAI_API_KEY= \
  ANTHROPIC_API_KEY= "$KEVO" replay "$lref"
has "replayed $n of $n journal entries"; has "no divergence"
has "$(echo "$best_line" | sed 's/ the reference.*//')"
before=$(md5sum < "$KEVO_DB")
cat > greedy2.lua <<'LUA'
local g = require("kevo.strategy").load("greedy")
return {name = "greedy", options = {"steps", "n"}, run = function(ctx, opts)
  ctx:evaluate(ctx:seed_candidates())
  opts.n = 3 -- asks for three rewrites where the run asked for two
  g.run(ctx, opts)
end}
LUA
t "replay of a changed strategy" 1 env -u KEVO_EVALUATOR "$KEVO" replay "$lref" --strategy ./greedy2.lua
has "diverges from its journal at seq 2"; has "request.n: 3 vs 2"; has "diverged at seq 2"
[ "$(md5sum < "$KEVO_DB")" = "$before" ] && echo "ok   replay wrote nothing" || say_fail "replay changed the archive"

# the clock is journaled: a run stopped by --time replays to the same stop
cat > endless.lua <<'LUA'
return {name = "endless", run = function(ctx)
  local i = 0
  while true do
    i = i + 1
    local c = ctx:candidate(ctx.seeds[1], {BLOCK = 512, VEC = 4}, "endless")
    c.source = c.source .. "\n// variant " .. i .. "\n"
    ctx:evaluate({c})
  end
end}
LUA
t "--time run" 0 env KEVO_MODEL_DELAY=0.05 "$KEVO" run "$recipe" --strategy ./endless.lua --time 1s
r=$(last_run); evals=$(sed -n 's/^run [0-9]* done: .*: \([0-9]*\) evaluations.*/\1/p' "$out")
t "replay of a --time run" 0 "$KEVO" replay "$r"; has "stopped: time"; has "^$evals evaluations"

# --time is hard inside a batch: a batch handed over just before the deadline starts nothing
# after it (its other candidates come back not_evaluated), the run ends within a candidate's
# time of its budget, and a resume after the batch's commit and a replay give the strategy the
# very same batch
cat > bigbatch.lua <<'LUA'
return {name = "bigbatch", run = function(ctx)
  local e = ctx:evaluate(ctx:seed_candidates())[1]
  local batch = {}
  require("kevo.searchutil").each_point(ctx:knob_space(e), function(k)
    batch[#batch + 1] = ctx:candidate(e, k, "grid")
  end)
  local got, stop = ctx:evaluate(batch)
  local n_ok, n_late, ids = 0, 0, {}
  for i, r in ipairs(got) do
    if r.verdict == "not_evaluated" then
      n_late = n_late + 1
      assert(r.id < 0 and not r.ok and r.message:find("time ran out", 1, true), r.message)
      ids[#ids + 1] = i .. "=" .. r.id .. ":late"
    else
      n_ok = n_ok + 1
      ids[#ids + 1] = i .. "=" .. r.id .. ":" .. r.verdict
    end
  end
  ctx:log("BATCH %d evaluated, %d not evaluated, stop %s; %s", n_ok, n_late,
          stop and stop.reason or "none", table.concat(ids, " "))
  ctx:evaluate(batch) -- stopped here by the run's time
  ctx:log("NOT REACHED")
end}
LUA
targs=(run "$recipe" --strategy ./bigbatch.lua --time 1s)
t "--time inside a batch" 0 env KEVO_MODEL_DELAY=0.1 "$KEVO" "${targs[@]}"
r=$(last_run); has "stopped: --time budget spent"; grep -q "NOT REACHED" "$out" && say_fail "the strategy went on past its stop"
grep '^BATCH' "$out" > batch_live.txt
late=$(sed -n 's/^BATCH [0-9]* evaluated, \([0-9]*\) not evaluated, stop time;.*/\1/p' batch_live.txt)
[ "${late:-0}" -gt 0 ] && echo "ok   $late candidates of the batch not started after --time" ||
  say_fail "the batch ran to its end past --time: $(cat batch_live.txt)"
secs=$(sed -n 's/^run [0-9]* done: .*, \([0-9.]*\) s \[time\]$/\1/p' "$out")
awk -v s="${secs:-99}" 'BEGIN { exit !(s <= 1.5) }' && echo "ok   the run ended at $secs s of a 1 s budget (20 candidates x 0.1 s asked)" ||
  say_fail "the run took ${secs:-?} s of run time on a 1 s budget"
t "replay of a batch cut by --time" 0 "$KEVO" replay "$r"; has "no divergence"; has "stopped: time"
grep '^ *BATCH' "$out" | sed 's/^ *//' | cmp -s - batch_live.txt && echo "ok   the replay's batch is the run's" ||
  say_fail "the replay's batch differs: $(grep BATCH "$out")"
killed "kill after a batch cut by --time" env KEVO_MODEL_DELAY=0.1 KEVO_FAULT=committed:2 "$KEVO" "${targs[@]}"
r=$(last_run); grep '^BATCH' "$out" && say_fail "killed before the batch's log"
dump "$r" > cut_before.txt
resume "a batch cut by --time" "$r"; has "stopped: --time budget spent"
grep '^BATCH' "$out" > batch_resumed.txt
[ -s batch_resumed.txt ] && grep -q "stop time" batch_resumed.txt && echo "ok   the resume read the cut batch back: $(cut -c1-60 batch_resumed.txt)" ||
  say_fail "the resume's batch: $(cat batch_resumed.txt)"
t "replay of the resumed run" 0 "$KEVO" replay "$r"; has "no divergence"
grep '^ *BATCH' "$out" | sed 's/^ *//' | cmp -s - batch_resumed.txt && echo "ok   the resumed run replays to the same batch" ||
  say_fail "the resumed run's replay differs: $(grep BATCH "$out")"

[ $fail = 0 ] && echo "resume: all passed"
exit $fail
