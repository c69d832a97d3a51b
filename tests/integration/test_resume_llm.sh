#!/usr/bin/env bash
# kevo run --resume with an LLM (docs/resume.md), against real loopback servers: no reply is
# paid for twice, and a resumed run asks what an uninterrupted one asks, request by request.
# - An n>1 batch (native_n off: one request per sample, one body) killed while one sample is
#   held by the server and its sibling has answered; resumed with a second kill once a
#   proposal's replies are stored but not journaled; resumed again. Against an uninterrupted
#   run: the same count of requests sent (plus the one held), the same prompts, the same
#   journal and candidates. The strategy asks each prompt twice, so a resumed process that
#   answered a prompt from a reply it had used already would ask the server less often.
# - The same with one sample of a proposal answered with malformed JSON (a failure that is not
#   retried): stored, then settled again by the resume, not asked again.
# - A run that ended on [stall], resumed with a larger --max-evals, goes on asking the LLM.
set -u
fail=0
tmp=$(mktemp -d)
srv_pid=
srv2_pid=
bg_pid=
trap '[ -n "$srv_pid" ] && kill $srv_pid 2>/dev/null; [ -n "$srv2_pid" ] && kill $srv2_pid 2>/dev/null
      [ -n "$bg_pid" ] && kill -9 $bg_pid 2>/dev/null; rm -rf "$tmp"' EXIT
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
jdump() { "$KEVO" script "$KEVO_SRC/tests/integration/journal_dump.lua" "$KEVO_DB" "$1"; }
wait_for() { # wait_for PATTERN FILE [N]: until FILE has N (1) lines matching PATTERN, 10 s at most
  for _ in $(seq 100); do [ "$(grep -c -- "$1" "$2")" -ge "${3:-1}" ] && return 0; sleep 0.1; done
  return 1
}
start_server() { # start_server PORTFILE CMD...: prints the port
  local pf=$1; shift
  "$@" > "$pf" &
  for _ in $(seq 50); do grep -q PORT "$pf" 2>/dev/null && break; sleep 0.1; done
}

# --- an n>1 batch killed with a sibling answered, then a second kill after the resume ---------
log="$tmp/llm.log"; ctl="$tmp/llm.ctl"; : > "$log"
start_server port.txt python3 "$KEVO_SRC/tests/integration/resume_llm_server.py" "$log" "$ctl"
srv_pid=$!
port=$(sed -n 's/^PORT //p' port.txt)
[ -n "$port" ] || { echo "FAIL: the loopback server did not start"; exit 1; }
printf 'llm.base_url = http://127.0.0.1:%s/v1\nllm.native_n = false\nllm.log = false\n' "$port" > kevo.conf
cat > again.lua <<'LUA'
-- asks every prompt twice (two samples each time): the second asking must reach the server
return {name = "again", run = function(ctx)
  ctx:evaluate(ctx:seed_candidates())
  local parent = ctx.best
  local feedback = parent.feedback
  for _ = 1, 5 do
    local kids = ctx:propose(parent, feedback, 2)
    for _, c in ipairs(ctx:propose(parent, feedback, 2)) do kids[#kids + 1] = c end
    local got = ctx:evaluate(kids)
    feedback = got[1] and got[1].feedback or feedback
    if ctx.best ~= parent then parent = ctx.best end
  end
end}
LUA
largs=(run "$recipe" --llm vllm:rewriter --strategy ./again.lua --max-evals 40)
t "reference run (uninterrupted)" 0 "$KEVO" "${largs[@]}"
ref=$(last_run); dump "$ref" > ref.txt; jdump "$ref" > ref_journal.txt
grep "^sent" "$log" | sort > sent_ref.txt
recv_ref=$(grep -c "^recv" "$log")
[ "$recv_ref" -ge 16 ] || say_fail "the reference asked $recv_ref times, want at least 16"
second=$(grep "^sent" "$log" | awk '{print $2}' | awk '!seen[$0]++' | sed -n 2p) # step 2's prompt

: > "$log"
echo "holdone $second" > "$ctl"
"$KEVO" "${largs[@]}" > bg.txt 2>&1 &
bg_pid=$!
wait_for "^held $second" "$log" || say_fail "the held request never came"
wait_for "^sent $second" "$log" || say_fail "the held request's sibling was not answered"
sleep 0.5 # time to store the sibling's reply (it is stored as it arrives)
kill -9 $bg_pid; wait $bg_pid 2>/dev/null; bg_pid=
rm -f "$ctl"
r=$(last_run)
t "resume, killed once a proposal is stored, not journaled" 137 \
  env KEVO_FAULT=proposed:2 "$KEVO" run --resume "$r"
t "resumed again" 0 "$KEVO" run --resume "$r"
has "resumed: "
recv=$(grep -c "^recv" "$log")
[ "$recv" = $((recv_ref + 1)) ] && echo "ok   requests sent: $recv, the reference's $recv_ref and the held one again" \
  || say_fail "requests sent: $recv, want $((recv_ref + 1)) (the reference's $recv_ref and the held one again)"
grep "^sent" "$log" | sort > sent.txt
cmp -s sent_ref.txt sent.txt && echo "ok   the same prompts as the uninterrupted run" \
  || { say_fail "prompts differ from the uninterrupted run"; diff sent_ref.txt sent.txt | head -5; }
jdump "$r" > journal.txt
cmp -s ref_journal.txt journal.txt && echo "ok   the same journal as the uninterrupted run" \
  || { say_fail "the journal differs from the uninterrupted run"; diff ref_journal.txt journal.txt | cut -c1-200 | head -6; }
dump "$r" > got.txt
cmp -s ref.txt got.txt && echo "ok   the same candidates, verdicts and best" \
  || { say_fail "candidates differ from the uninterrupted run"; diff ref.txt got.txt | head -5; }

# --- a stored failure that was not retried (malformed JSON) fails again, is not asked again ---
: > "$log"
echo "oddmalformed $second" > "$ctl" # one sample of each asking gets a body that is not JSON
t "reference run with a malformed sample" 0 "$KEVO" "${largs[@]}"
ref2=$(last_run); jdump "$ref2" > ref2_journal.txt
recv_ref2=$(grep -c "^recv" "$log"); grep "^sent" "$log" | sort > sent_ref2.txt
: > "$log"
t "killed once step 2's replies (one malformed) are stored" 137 \
  env KEVO_FAULT=proposed:3 "$KEVO" "${largs[@]}"
r=$(last_run)
t "resumed" 0 "$KEVO" run --resume "$r"
recv=$(grep -c "^recv" "$log")
[ "$recv" = "$recv_ref2" ] && echo "ok   requests sent: $recv, as the uninterrupted run (the malformed one not asked again)" \
  || say_fail "requests sent: $recv, want $recv_ref2 as the uninterrupted run"
grep "^sent" "$log" | sort > sent.txt
cmp -s sent_ref2.txt sent.txt || { say_fail "prompts differ (malformed sample)"; diff sent_ref2.txt sent.txt | head -5; }
jdump "$r" > journal.txt
cmp -s ref2_journal.txt journal.txt && echo "ok   the same journal as the uninterrupted run (malformed sample)" \
  || { say_fail "the journal differs (malformed sample)"; diff ref2_journal.txt journal.txt | cut -c1-200 | head -6; }
rm -f "$ctl"
kill $srv_pid; wait $srv_pid 2>/dev/null; srv_pid=

# --- a run that ended on [stall] goes on when resumed with a larger budget --------------------
{ printf 'Here is a faster version:\n\n```cuda\n'; cat "$fix/toyscale/scale.cu"
  printf '/* kevo-model: speed=1.5 */\n```\n'; } > reply.md
clog="$tmp/canned.log"; : > "$clog"
start_server port2.txt python3 "$KEVO_SRC/tests/integration/canned_llm_server.py" reply.md "$clog"
srv2_pid=$!
port2=$(sed -n 's/^PORT //p' port2.txt)
printf 'llm.base_url = http://127.0.0.1:%s/v1\nllm.log = false\n' "$port2" > kevo.conf
t "a run whose LLM repeats itself" 0 "$KEVO" run "$recipe" --llm vllm:same --strategy greedy --max-evals 10
has "\[stall\]"; has "^stopped: the LLM proposed only known kernels 5 times in a row"
r=$(last_run); asked=$(wc -l < "$clog")
t "the stalled run resumed with --max-evals 30" 0 "$KEVO" run --resume "$r" --max-evals 30
has "going on live"; has "\[stall\]"
asked2=$(wc -l < "$clog")
[ "$asked2" -gt "$asked" ] && echo "ok   the resume went on asking ($asked, then $asked2 requests)" \
  || say_fail "the resume of a stalled run asked nothing more ($asked requests, then $asked2)"
t "replay of the resumed stalled run" 0 "$KEVO" replay "$r"; has "no divergence"; has "stopped: stall"

[ $fail = 0 ] && echo "resume with an LLM: all passed"
exit $fail
