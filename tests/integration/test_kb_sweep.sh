#!/usr/bin/env bash
# bench/kb_zygote.py and bench/kb_sweep.py without torch or a GPU: the zygote's stand-in runs
# a script as python would (argv, working directory, environment, stdin/stdout/stderr, exit
# status; its child dies with it) and as kevo's bridge (kevo import's message comes through);
# the sweep, over a stand-in kevo, writes one row per problem as it goes (judged, refused,
# timeout, eval_failed), runs a failure again alone, and its loopback reply for ReLU compiles
# against the contract `kevo import` writes.
set -u
kevo="${KEVO:?}"
src="${KEVO_SRC:?}"
tmp=$(mktemp -d)
zpid=
cleanup() {
  [ -n "$zpid" ] && kill "$zpid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

# ---- the zygote (--bare: no torch here) ----
sock="$tmp/z.sock"
python3 "$src/bench/kb_zygote.py" serve "$sock" --bare json >"$tmp/zygote.log" 2>&1 &
zpid=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
python3 "$src/bench/kb_zygote.py" client "$sock" "$tmp/py" || bad "client script not written"
cat >"$tmp/s.py" <<'PY'
import json, os, sys, time
data = sys.stdin.read()
print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "foo": os.environ.get("FOO"), "in": data}))
sys.stderr.write("on stderr\n")
if data.startswith("sleep"):
    print(os.getpid(), flush=True)
    time.sleep(60)
sys.exit(int(os.environ.get("CODE", "0")))
PY
mkdir -p "$tmp/cwd"
(cd "$tmp/cwd" && echo hello | FOO=bar CODE=3 "$tmp/py" ../s.py a b >"$tmp/s.out" 2>"$tmp/s.err")
rc=$?
if [ $rc -eq 3 ] && grep -q '"argv": \["../s.py", "a", "b"\], "cwd": "[^"]*/cwd", "foo": "bar", "in": "hello\\n"' "$tmp/s.out" &&
  grep -q "on stderr" "$tmp/s.err"; then
  ok "the stand-in runs the script with its argv, cwd, environment, fds and exit status"
else
  bad "stand-in: exit $rc, out $(cat "$tmp/s.out"), err $(cat "$tmp/s.err")"
fi
(echo sleep | "$tmp/py" "$tmp/s.py" >"$tmp/sleep.out" 2>/dev/null) &
standin=$!
for _ in $(seq 100); do [ "$(wc -l <"$tmp/sleep.out")" -ge 2 ] && break; sleep 0.05; done
kid=$(sed -n 2p "$tmp/sleep.out")
pkill -KILL -P "$standin" 2>/dev/null # the stand-in python itself (child of the subshell)
kill -KILL "$standin" 2>/dev/null
gone=
for _ in $(seq 100); do
  if [ -n "$kid" ] && ! kill -0 "$kid" 2>/dev/null; then gone=1; break; fi
  sleep 0.05
done
if [ -n "$gone" ]; then ok "the script's process dies with its stand-in"; else bad "child $kid outlived its stand-in"; fi
KEVO_PYTHON="$tmp/py" "$kevo" import "$src/tests/kbench/relu.py" --out "$tmp/r" >"$tmp/imp.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "has no torch" "$tmp/imp.out"; then
  ok "kevo import runs its bridge through the stand-in (no torch here: exit 1, said)"
else
  bad "kevo import through the stand-in: exit $rc: $(cat "$tmp/imp.out")"
fi
kill "$zpid" 2>/dev/null
wait "$zpid" 2>/dev/null
zpid=

# ---- the sweep over a stand-in kevo ----
mkdir -p "$tmp/kb/level1" "$tmp/kb/level2"
for n in level1/1_A level1/2_B level1/3_C level1/4_D level2/1_E level1/19_ReLU; do
  cp "$src/tests/kbench/relu.py" "$tmp/kb/$n.py"
done
"$kevo" import "$src/tests/kbench/relu.py" --description "$src/tests/kbench/relu.json" \
  --out "$tmp/real" >/dev/null 2>&1 || bad "kevo import relu from its recorded description"
cat >"$tmp/fakekevo" <<EOF
#!/usr/bin/env bash
cmd=\$1; shift
if [ "\$cmd" = import ]; then
  n=\$(basename "\$1" .py); out=\$3
  case \$n in
    2_B) echo "kevo import: E_PROBLEM: the reference is random" >&2; exit 2 ;;
    3_C) sleep 30 ;;
  esac
  mkdir -p "\$out/\$n"
  cp "$tmp/real/relu/README.md" "\$out/\$n/README.md"
  echo "imported \$1"; echo "import peak GPU memory 1.5 GiB for a problem of 1 GiB"; exit 0
fi
if [ "\$cmd" = run ]; then echo "vs PyTorch: 1.00x eager"; exit 0; fi
echo "\$1" >> "$tmp/evals"
case \$(basename "\$1" .yaml) in 4_D) echo "garbage: out of memory"; exit 1 ;; esac
echo '{"verdict": "unwritten", "message": "out never written", "bench": {"tensors_via": "ipc"}}'
exit 1
EOF
chmod +x "$tmp/fakekevo"
python3 "$src/bench/kb_sweep.py" --kevo "$tmp/fakekevo" --kb-dir "$tmp/kb" --out "$tmp/sw" \
  --gpus 0,1 --slots 2 --import-timeout 3 --loopback level1/19_ReLU.py all >"$tmp/sweep.out" 2>&1
rc=$?
tsv="$tmp/sw/kb_sweep.tsv"
row() { awk -F'\t' -v p="$1" '$1 == p {print $8}' "$tsv"; }
if [ $rc -eq 0 ] && [ "$(wc -l <"$tsv")" -eq 6 ] && [ "$(row level1/1_A.py)" = judged ] &&
  [ "$(row level2/1_E.py)" = judged ] && [ "$(row level1/2_B.py)" = refused ] &&
  [ "$(row level1/3_C.py)" = timeout ] && [ "$(row level1/4_D.py)" = eval_failed ]; then
  ok "the sweep's rows: judged, refused, timeout, eval_failed"
else
  bad "sweep exit $rc:"; cat "$tmp/sweep.out" "$tsv"
fi
if [ "$(grep -c 4_D "$tmp/evals")" -eq 2 ]; then ok "a failure beside others runs again alone"; else bad "4_D evaluated $(grep -c 4_D "$tmp/evals") times"; fi
grep -q "judged        3" "$tmp/sw/kb_summary.txt" && grep -q "import s      median" "$tmp/sw/kb_summary.txt" ||
  bad "summary: $(cat "$tmp/sw/kb_summary.txt")"
if grep -q "^level1/19_ReLU.py	[0-9.]*	0	vs PyTorch" "$tmp/sw/kb_loopback.tsv"; then
  ok "loopback row for 19_ReLU"
else
  bad "loopback: $(cat "$tmp/sw/kb_loopback.tsv" 2>&1)"
fi
# the docs table: every problem of the folder, the ones with no row "not started"
mkdir -p "$tmp/kb/level3" && touch "$tmp/kb/level3/9_X.py"
python3 "$src/bench/kb_sweep.py" --table "$tsv" --kb-dir "$tmp/kb" >"$tmp/table.md" 2>&1
if grep -q '^7 problems: judged 3, refused 1, timeout 1, eval_failed 1, not started 1\.$' "$tmp/table.md" &&
  grep -q '^| level1/1_A | [0-9.]* | 1.5 | 1 | [0-9.]* | judged | `unwritten` |$' "$tmp/table.md" &&
  grep -q '^| level1/2_B | [0-9.]* | - | - | - | refused | the reference is random |$' "$tmp/table.md" &&
  grep -q '^| level3/9_X | - | - | - | - | not started | ' "$tmp/table.md"; then
  ok "--table: counts, judged, refused with its reason, not started"
else
  bad "--table:"; cat "$tmp/table.md"
fi
# the canned reply the sweep wrote compiles against the real contract (no GPU: no_gpu at verify)
reply="$tmp/sw/work/level1/19_ReLU.reply.md"
sed -n '/^```cuda$/,/^```$/p' "$reply" | sed '1d;$d' >"$tmp/relu_reply.cu"
"$kevo" eval "$tmp/real/relu.yaml" "$tmp/relu_reply.cu" --json >"$tmp/reply.json" 2>/dev/null
v=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("verdict"))' "$tmp/reply.json" 2>&1)
if [ "$v" = no_gpu ]; then ok "the loopback ReLU reply compiles (verdict no_gpu at verify)"; else bad "reply: $v: $(head -c 400 "$tmp/reply.json")"; fi

echo "$fails failed"
[ $fails -eq 0 ]
