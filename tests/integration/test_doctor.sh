#!/usr/bin/env bash
# kevo doctor: one line per item, a fix for what is missing, JSON that parses, and an exit code
# that says whether a search can run here (0 with a GPU and NVRTC, 1 without a GPU).
set -u
fail=0
out=$("$KEVO" doctor --offline 2>&1); rc=$?
echo "$out"
gpu=0
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && gpu=1
want=$((1 - gpu))
[ "$rc" = "$want" ] || { echo "FAIL: exit $rc, want $want (gpu=$gpu)"; fail=1; }
for item in kevo NVRTC GPU archive Triton LLM; do
  echo "$out" | grep -qE "^(ok  |MISS|--  ) $item " || { echo "FAIL: no line for $item"; fail=1; }
done
echo "$out" | grep -qE '^ok   NVRTC +NVRTC [0-9]+\.[0-9]+' || { echo "FAIL: NVRTC not ok"; fail=1; }
if [ $gpu = 0 ]; then
  echo "$out" | grep -q "fix: install the NVIDIA driver" || { echo "FAIL: no fix for the GPU"; fail=1; }
fi
# no key is ever printed, even when set
OPENAI_API_KEY=sk-doctor-secret-123 KEVO_LLM=openai:gpt-test "$KEVO" doctor --offline --json \
  > /tmp/kevo-doctor.$$ 2>&1
grep -q "sk-doctor-secret" /tmp/kevo-doctor.$$ && { echo "FAIL: the key was printed"; fail=1; }
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert {c["item"] for c in d["checks"]} >= {"NVRTC","GPU","LLM"}' \
  /tmp/kevo-doctor.$$ || { echo "FAIL: --json"; cat /tmp/kevo-doctor.$$; fail=1; }
rm -f /tmp/kevo-doctor.$$
# GPUs and their workers: three stand-in GPUs, a worker started on each; two models refused
out=$(KEVO_FAKE_GPUS=3 KEVO_WORKER="python3 $KEVO_SRC/tests/integration/fake_worker.py ok" \
      "$KEVO" doctor --offline 2>&1)
echo "$out" | grep -qE '^ok   GPUs +3 GPUs; --gpus all starts 3 workers' \
  || { echo "FAIL: no GPUs line"; echo "$out"; fail=1; }
[ "$(echo "$out" | grep -cE '^ +gpu [0-2]: Fake GPU \(sm_90\).*worker ok')" = 3 ] \
  || { echo "FAIL: not one line per GPU and worker"; echo "$out"; fail=1; }
out=$(KEVO_FAKE_GPU_NAMES=1=Other KEVO_WORKER="python3 $KEVO_SRC/tests/integration/fake_worker.py ok" \
      "$KEVO" doctor --offline 2>&1)
echo "$out" | grep -qE '^MISS GPUs .*GPUs of 2 models' \
  || { echo "FAIL: two models not flagged"; echo "$out"; fail=1; }
"$KEVO" doctor --bogus >/dev/null 2>&1; [ $? = 2 ] || { echo "FAIL: bad flag is not exit 2"; fail=1; }
[ $fail = 0 ] && echo "doctor: all passed"
exit $fail
