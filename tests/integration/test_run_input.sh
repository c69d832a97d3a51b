#!/usr/bin/env bash
# kevo run, replay and the archive readers given mistaken input (issue 15): exit 2 for bad usage
# or input, 1 for a job that failed, as docs/archive.md says; nothing is created on the way.
# Runs on the synthetic cost model (KEVO_EVALUATOR=model:..., no GPU).
set -u
fail=0
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
recipe="$KEVO_SRC/tests/integration/run_fixtures/toyscale.yaml"
export KEVO_EVALUATOR="model:$KEVO_SRC/examples/cost_model.lua"
export KEVO_DB="$tmp/kevo.db"
cd "$tmp" || exit 1
if ! "$KEVO" script <(echo 'require "kevo.archive"; require "kevo.recipe"') 2>/dev/null; then
  echo "SKIP: this build lacks kevo.archive or kevo.recipe, which kevo run needs" >&2; exit 77
fi
out="$tmp/out.txt"
t() { # t NAME EXPECTED_RC CMD... (30 s at most)
  local name=$1 want=$2; shift 2
  timeout 30 "$@" >"$out" 2>&1 </dev/null; local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, want $want"; sed 's/^/  | /' "$out" | head -20; fail=1
  else echo "ok   $name"; fi
}
has() { grep -qF -- "$1" "$out" || { echo "FAIL: output lacks '$1'"; sed 's/^/  | /' "$out" | head -20; fail=1; }; }
lacks() { ! grep -qF -- "$1" "$out" || { echo "FAIL: output has '$1'"; sed 's/^/  | /' "$out" | head -20; fail=1; }; }
runs() { "$KEVO" script <(echo 'local db = require("kevo.archive").open(nil, {readonly = true}) print(db and #db:runs() or 0)'); }

# replay takes `last`, as show, report and export do
t "replay last with no archive runs" 2 "$KEVO" replay last --db "$tmp/none.db"
t "a run to replay" 0 "$KEVO" run "$recipe" --max-evals 4
t "replay last" 0 "$KEVO" replay last; has "replay of run 1"; has "no divergence"
t "replay a bad run spec" 2 "$KEVO" replay lastt; has "RUN is a run id or last, got 'lastt'"

# a read-only archive (the file; its directory writable): readers open it immutable and leave
# no FILE-wal or FILE-shm behind (docs/archive.md). Root writes anyway, so as root the readers
# run as nobody.
as_reader=()
if [ "$(id -u)" = 0 ]; then
  command -v setpriv >/dev/null && as_reader=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
mkdir -m 777 ro && cp kevo.db ro/kevo.db && chmod 444 ro/kevo.db && chmod 755 "$tmp"
if [ "$(id -u)" = 0 ] && ! "${as_reader[@]}" "$KEVO" version >/dev/null 2>&1; then
  echo "skip read-only archive: nobody cannot run $KEVO here"
else
  for c in "runs" "show last" "report last" "replay last"; do
    # shellcheck disable=SC2086
    t "$c on a read-only archive" 0 "${as_reader[@]}" "$KEVO" $c --db ro/kevo.db
    ls ro/kevo.db-* >/dev/null 2>&1 && { echo "FAIL: $c left $(ls ro/kevo.db-*)"; rm -f ro/kevo.db-*; fail=1; }
  done
fi

# kevo.conf that is a directory: a message, not a Lua traceback
mkdir -p confdir/kevo.conf
(cd confdir && t "run with kevo.conf a directory" 2 "$KEVO" run "$recipe" --max-evals 2 --db "$tmp/c.db")
has "kevo.conf: is not a regular file (a directory)"; lacks "traceback"
(cd confdir && timeout 60 "$KEVO" doctor >"$out" 2>&1)
has "kevo.conf: is not a regular file (a directory)"; lacks "traceback"

# an archive that is not SQLite: the job failed (1) in every command, as docs/archive.md says
head -c 20000 /dev/urandom >garbage.db
before=$(md5sum <garbage.db)
for c in "run $recipe" "run --resume 1" "replay 1" "runs" "show 1" "report 1" "export 1 outdir"; do
  # shellcheck disable=SC2086
  t "$c --db garbage.db" 1 "$KEVO" $c --db garbage.db; has "garbage.db"; has "not an SQLite database"
  lacks "E_DB: archive"
done
[ "$(md5sum <garbage.db)" = "$before" ] && echo "ok   garbage.db untouched" || { echo "FAIL: garbage.db changed"; fail=1; }

# strategy options and --arch are checked before a run row exists: exit 2 naming the option,
# the value and what is allowed
n0=$(runs)
t "--set method=banana" 2 "$KEVO" run "$recipe" --set method=banana
has "--set method=banana: autotune's method must be one of auto, exhaustive, anneal, random"
t "--set samples=abc" 2 "$KEVO" run "$recipe" --set samples=abc; has "samples must be an integer >= 1"
t "--set batch=0" 2 "$KEVO" run "$recipe" --set batch=0; has "--set batch=0: autotune's batch must be an integer >= 1"
t "--set batch=-1" 2 "$KEVO" run "$recipe" --set batch=-1; has "--set batch=-1"
t "--set cooling=2" 2 "$KEVO" run "$recipe" --set cooling=2; has "a number from 0 to 1"
t "--set beam.width=0 in a composition" 2 "$KEVO" run "$recipe" --strategy beam+autotune --set beam.width=0
has "beam's width must be an integer >= 1"
t "--set batch=0 in a composition" 2 "$KEVO" run "$recipe" --strategy beam+autotune --set batch=0
has "autotune's batch"
t "--set descriptors=foo" 2 "$KEVO" run "$recipe" --strategy evolve --set descriptors=registers,foo
has "evolve's descriptors must be two comma-separated descriptors"
t "--arch sm_1" 2 "$KEVO" run "$recipe" --arch sm_1; has "--arch 'sm_1': expected sm_NN"
t "--arch sm_99" 2 "$KEVO" run "$recipe" --arch sm_99; has "--arch 'sm_99': not supported by NVRTC"
for s in "beam++autotune" "+autotune" "autotune+"; do
  t "--strategy $s" 2 "$KEVO" run "$recipe" --strategy "$s"; has "an empty part"
done
[ "$(runs)" = "$n0" ] && echo "ok   no run row was made" || { echo "FAIL: runs went from $n0 to $(runs)"; fail=1; }
t "good values still run" 0 "$KEVO" run "$recipe" --max-evals 3 --set method=random --set batch=2 --set cooling=0.5
t "eval --arch sm_1" 2 "$KEVO" eval "$recipe" "$KEVO_SRC/recipes/vector_add/vectorized.cu" --arch sm_1
has "arch 'sm_1': expected sm_NN"

exit $fail
