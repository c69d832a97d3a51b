#!/usr/bin/env bash
# kevo run --gpus without a GPU: stand-in workers (tests/integration/fake_worker.py, real NVRTC
# compiles) on "GPUs" 0 and 1. The journal stays exact whatever the number of GPUs
# (docs/resume.md "Many GPUs"): one sweep on one worker, on two, on two killed mid-run and
# resumed on one, and on `gpus = all` from kevo.conf, gives the same evaluations in the same
# order with the same verdicts; every result names its GPU and both GPUs worked. Usage errors
# and GPUs of two models are refused.
set -u
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
recipe="$KEVO_SRC/tests/integration/run_fixtures/toyscale.yaml"
unset KEVO_EVALUATOR KEVO_FAULT KEVO_LLM CUDA_VISIBLE_DEVICES
export KEVO_WORKER="python3 $KEVO_SRC/tests/integration/fake_worker.py ok"
export KEVO_FAKE_EVAL_S=0.03
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
run_id() { sed -n 's/^run \([0-9]*\) .*/\1/p' "$out" | head -1; }
gdump() { "$KEVO" script "$KEVO_SRC/tests/integration/gpus_dump.lua" "$1" "$2"; }

t "--gpus takes a list" 2 "$KEVO" run "$recipe" --gpus 0,,1;                 has "takes all or GPU"
t "--gpus: a GPU twice" 2 "$KEVO" run "$recipe" --gpus 1,1;                  has "GPU 1 twice"
t "one worker" 0 "$KEVO" run "$recipe" --db one.db
gdump one.db 1 > one.txt
grep -c "^batch" one.txt | grep -qx 24 || { echo "FAIL: the sweep is not 24 evaluations"; fail=1; }
grep -q "^gpu" one.txt && { echo "FAIL: one worker on the driver's GPU names no GPU"; fail=1; }

t "two workers" 0 "$KEVO" run "$recipe" --db two.db --gpus 0,1;    has "(2 workers, --gpus 0,1)"
gdump two.db 1 > two.txt
diff <(grep ^batch one.txt) <(grep ^batch two.txt) > /dev/null \
  && echo "ok   two workers: the same evaluations, verdicts and order" \
  || { echo "FAIL: two workers differ from one"; diff one.txt two.txt | head; fail=1; }
n0=$(sed -n 's/^gpu 0 //p' two.txt); n1=$(sed -n 's/^gpu 1 //p' two.txt)
[ "${n0:-0}" -ge 4 ] && [ "${n1:-0}" -ge 4 ] && [ $((n0 + n1)) = 24 ] \
  && echo "ok   both GPUs measured ($n0 + $n1), every result names its GPU" \
  || { echo "FAIL: GPU use $n0 + $n1"; cat two.txt; fail=1; }

t "the report names the GPU" 0 "$KEVO" report 1 --db two.db
grep -qE "measured +Fake GPU, sm_90, gpu [01] \(00000000:1[01]:00.0\)" "$out" \
  || { echo "FAIL: the report's fingerprint lacks the GPU"; sed 's/^/  | /' "$out"; fail=1; }

# killed after its second batch on two GPUs, resumed on one: the journal reads back, goes on
t "two workers, killed" 137 env KEVO_FAULT=committed:2 "$KEVO" run "$recipe" --db kill.db --gpus 0,1
t "resumed on one" 0 "$KEVO" run --resume 1 --db kill.db --gpus 0
has "resumed after journal entry 2"
gdump kill.db 1 > kill.txt
diff <(grep ^batch one.txt) <(grep ^batch kill.txt) > /dev/null \
  && echo "ok   killed on two GPUs and resumed on one: the same journal as one GPU" \
  || { echo "FAIL: the resumed run differs"; diff one.txt kill.txt | head; fail=1; }
grep -q "^gpu 1 " kill.txt && grep -q "^gpu 0 " kill.txt \
  || { echo "FAIL: the batches before the kill lost their GPUs"; cat kill.txt; fail=1; }
# replayed offline (no worker at all): the same again
t "replayed without a worker" 0 env KEVO_WORKER=/bin/false "$KEVO" replay 1 --db kill.db

# kevo.conf's gpus, and "all" through the devices op
printf 'gpus = all\n' > kevo.conf
t "gpus = all in kevo.conf" 0 env KEVO_FAKE_GPUS=3 "$KEVO" run "$recipe" --db conf.db
has "(3 workers, --gpus all)"
gdump conf.db 1 > conf.txt
diff <(grep ^batch one.txt) <(grep ^batch conf.txt) > /dev/null \
  || { echo "FAIL: three workers differ from one"; fail=1; }
printf 'gpus = 0,x\n' > kevo.conf
t "a bad gpus in kevo.conf" 2 "$KEVO" run "$recipe" --db bad.db;              has "kevo.conf: gpus"
rm kevo.conf

t "GPUs of two models" 1 env KEVO_FAKE_GPU_NAMES=1=Other "$KEVO" run "$recipe" --db mix.db --gpus 0,1
has "gpu 0 is Fake GPU (sm_90), gpu 1 is Other (sm_90)"
[ -e mix.db ] && "$KEVO" runs --db mix.db 2>/dev/null | grep -q running \
  && { echo "FAIL: a refused run is left running"; fail=1; }

# a suite's problems share the workers: one per GPU for the whole suite, not per problem
t "a suite of three on two workers" 0 env KEVO_FAKE_LOG="$tmp/suite.log" "$KEVO" suite \
  "$recipe" "$recipe" "$recipe" --max-evals 4 --gpus all --db suite.db
has "suite 1 (done): 3 problems"
w=$(awk '$1 == "evaluate" {print $3}' "$tmp/suite.log" | sort -u | wc -l)
[ "$w" = 2 ] && echo "ok   the suite's three problems were judged by the same two workers" \
  || { echo "FAIL: the suite's evaluations came from $w workers"; fail=1; }

[ $fail = 0 ] && echo "run --gpus: all passed"
exit $fail
