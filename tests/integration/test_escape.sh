#!/usr/bin/env bash
# The escape corpus (tests/escape/*.lua): strategies written as an attacker would, each run by
# `kevo run` on the synthetic cost model. For every one: kevo itself survives (no signal), the
# run ends within its --time budget plus 2 s (a Ctrl-C: 3.5 s after it), its exit code and output
# are the expected ones, "ESCAPED" never appears, no file is written outside the run's own
# output and archive, the loopback canary server gets no request, and the fake API key appears
# nowhere. Cases marked "inspect" are looked at from outside while they run: the strategy
# process has an empty environment, descriptors 0-2 only (pipes), seccomp on and no new
# privileges.
set -u
fail=0
tmp=$(mktemp -d)
canary_pid=
trap '[ -n "$canary_pid" ] && kill "$canary_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
corpus="$KEVO_SRC/tests/escape"
recipe="$KEVO_SRC/tests/integration/run_fixtures/toyscale.yaml"
if ! "$KEVO" script <(echo 'require "kevo.archive"; require "kevo.recipe"') 2>/dev/null; then
  echo "SKIP: this build lacks kevo.archive or kevo.recipe, which kevo run needs" >&2; exit 77
fi
export KEVO_EVALUATOR="model:$KEVO_SRC/examples/cost_model.lua"
export KEVO_STRATEGY_MEM_MB=128 # the memory bombs hit the cap in well under a second
key="sk-kevo-canary-$$-do-not-send"
export OPENAI_API_KEY="$key" ANTHROPIC_API_KEY="$key" KEVO_TEST_SECRET="$key"
unset KEVO_LLM KEVO_LLM_BASE_URL

# the canary: any request it logs fails the test
mkfifo "$tmp/canary.in"
python3 "$KEVO_SRC/tests/integration/canary_server.py" "$tmp/canary.log" < "$tmp/canary.in" > "$tmp/canary.port" &
canary_pid=$!
exec 9> "$tmp/canary.in"
for _ in $(seq 50); do [ -s "$tmp/canary.port" ] && break; sleep 0.1; done
port=$(cat "$tmp/canary.port")
[ -n "$port" ] || { echo "FAIL: the canary server did not start"; exit 1; }
export KEVO_LLM_BASE_URL_UNUSED="http://127.0.0.1:$port/v1"

# every module name kevo has: C bindings (runtime/l_*.c) and embedded Lua (lua/kevo/...)
modules="kevo"
for f in "$KEVO_SRC"/runtime/l_*.c; do n=$(basename "$f" .c); modules="$modules kevo.${n#l_}"; done
for f in $(cd "$KEVO_SRC/lua" && find kevo -name '*.lua' | sort); do
  m=${f%.lua}; m=${m%/init}; m=${m//\//.}; [ "$m" = kevo ] || modules="$modules $m"
done

# kevo runs with a library path the strategy process must keep (and nothing else of the env)
libpath="$tmp/libprobe${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

directive() { sed -n "s/^-- $1: *//p" "$2" | head -1; }

inspect() { # inspect HOSTPID: checks the strategy process of a running kevo
  local host=$1 child= i
  for i in $(seq 40); do
    child=$(pgrep -P "$host" -f strategy-process | head -1)
    [ -n "$child" ] && break; sleep 0.1
  done
  [ -n "$child" ] || { echo "FAIL: inspect: no strategy process under $host"; fail=1; return; }
  sleep 0.5
  local envsize fds seccomp nnp
  # nothing but a sanitizer build's options (ASAN_OPTIONS, UBSAN_OPTIONS) and the loader's
  # library path kevo was given (a bundle's kevo cannot start again without it)
  local libenv
  libenv=$(tr '\0' '\n' < "/proc/$child/environ" | grep '^LD_LIBRARY_PATH=')
  [ "$libenv" = "LD_LIBRARY_PATH=$libpath" ] || { echo "FAIL: inspect: library path '$libenv'"; fail=1; }
  envsize=$(tr '\0' '\n' < "/proc/$child/environ" | grep -vc -e '^[A-Z]*SAN_OPTIONS=' -e '^LD_LIBRARY_PATH=')
  fds=$(ls "/proc/$child/fd" | sort -n | tr '\n' ' ')
  seccomp=$(sed -n 's/^Seccomp:\s*//p' "/proc/$child/status")
  nnp=$(sed -n 's/^NoNewPrivs:\s*//p' "/proc/$child/status")
  local kinds=""
  for fd in 0 1 2; do kinds="$kinds$(readlink "/proc/$child/fd/$fd" | cut -d: -f1) "; done
  if [ "$envsize" = 0 ] && [ "$fds" = "0 1 2 " ] && [ "$seccomp" = 2 ] && [ "$nnp" = 1 ] \
     && [ "$kinds" = "pipe pipe pipe " ]; then
    echo "ok   inspect: environment empty but the library path, fds $fds($kinds), seccomp $seccomp, no_new_privs $nnp"
  else
    echo "FAIL: inspect: environ $envsize bytes, fds '$fds' ($kinds), seccomp $seccomp, nnp $nnp"; fail=1
  fi
}

# kevo's own start and finish (host and strategy process, recipe, archive) on this machine now:
# a run's wall time may exceed its budget by 2 s plus this
mkdir -p "$tmp/base/out"
printf 'return {name = "base", run = function(ctx) end}\n' > "$tmp/base/s.lua"
start=$(date +%s.%N)
(cd "$tmp/base" && "$KEVO" run "$recipe" --strategy ./s.lua --db "$tmp/base/kevo.db" \
   --out "$tmp/base/out" > /dev/null 2>&1)
base=$(echo "$(date +%s.%N) - $start" | bc)
echo "kevo's start and finish take ${base}s here"

n=0
for file in "$corpus"/${ESCAPE_ONLY:-}*.lua; do
  name=$(basename "$file" .lua)
  n=$((n + 1))
  dir="$tmp/$name"
  mkdir -p "$dir/out"
  sed -e "s|@TMP@|$tmp|g" -e "s|@PORT@|$port|g" -e "s|@MODULES@|$modules|g" "$file" > "$dir/strategy.lua"
  want_rc=$(directive exit "$file")
  budget=$(directive time "$file"); budget=${budget:-10}
  intr=$(directive interrupt "$file"); args=$(directive args "$file")
  time_args=(); [ "$budget" != none ] && time_args=(--time "${budget}s")
  touch "$tmp/marker"; sleep 0.01 # files newer than this were written by the case
  start=$(date +%s.%N)
  (cd "$dir" && LD_LIBRARY_PATH="$libpath" exec "$KEVO" run "$recipe" --strategy ./strategy.lua --db "$dir/kevo.db" \
      --out "$dir/out" "${time_args[@]}" $args > "$dir/log" 2>&1) &
  pid=$!
  [ "$(directive inspect "$file")" = yes ] && inspect "$pid"
  if [ -n "$intr" ]; then sleep "$intr"; kill -INT "$pid"; sent=$(date +%s.%N); fi
  wait "$pid"; rc=$?
  took=$(echo "$(date +%s.%N) - $start" | bc)
  # limit: when kevo must stop the strategy, from the command's start; grace: how long kevo
  # then lets it go on (lua/kevo/boundary.lua): 0.5 s past --time (GRACE_S), 2 s past the Ctrl-C
  # as this test sent it (STOP_GRACE_S; a loaded machine may send it well after $intr s)
  limit=$budget; grace=0.5
  [ "$budget" = none ] && limit=20
  [ -n "$intr" ] && limit=$(echo "$sent - $start" | bc) && grace=2
  bad=""
  [ "$rc" -gt 2 ] && bad="$bad kevo died (exit $rc)"
  [ -n "$want_rc" ] && [ "$rc" != "$want_rc" ] && bad="$bad exit $rc, want $want_rc;"
  while read -r w; do # every "-- want:" line must be in the output
    [ -n "$w" ] && ! grep -qF -- "$w" "$dir/log" && bad="$bad output lacks '$w';"
  done < <(sed -n 's/^-- want: *//p' "$file")
  grep -q ESCAPED "$dir/log" && bad="$bad ESCAPED;"
  # nothing a strategy writes may drive the terminal: no ESC, CR, BS or BEL byte, no 8-bit
  # CSI, no bidi override in what kevo printed
  LC_ALL=C grep -qP '[\x1b\x07\x08\r]|\xc2\x9b|\xe2\x80\xae' "$dir/log" && bad="$bad terminal controls printed raw;"
  # the run's own time (its summary line, from the run's start) within the limit, the grace and
  # 1.5 s to kill the process, reap it and finish the archive (2 s past --time, as always; the
  # Ctrl-C case had only kevo's start for that, and failed 1 run in 30 at load 8 when the kill
  # and finish took 0.1 s longer); the whole command's within that plus kevo's start and finish
  # (and 1 s for a loaded machine)
  ran=$(sed -n 's/^run [0-9]* [a-z]*: .*, \([0-9.]*\) s\( \[.*\]\)\{0,1\}$/\1/p' "$dir/log" | head -1)
  within=$(echo "$limit + $grace + 1.5" | bc)
  [ -n "$ran" ] && [ "$(echo "$ran > $within" | bc)" = 1 ] && bad="$bad the run took ${ran}s, limit ${limit}s + ${grace}s grace + 1.5;"
  [ "$(echo "$took > $within + 1 + $base" | bc)" = 1 ] && bad="$bad took ${took}s, limit ${limit}s + ${grace}s grace + 1.5 (+ ${base}s + 1);"
  grep -qF "$key" "$dir/log" "$dir"/kevo.db* 2>/dev/null && bad="$bad the key leaked;"
  # files: only the strategy copy, its log, the archive and out/ may exist in the case's dir
  strays=$(cd "$tmp" && find . -newer marker -type f ! -path "./$name/kevo.db*" ! -path "./$name/out/*" \
           ! -path "./$name/log" ! -path "./$name/strategy.lua" ! -name 'canary.*' | tr '\n' ' ')
  [ -n "$strays" ] && bad="$bad files written: $strays;"
  [ -e "$tmp/leak" ] || [ -e "$tmp/leak.db" ] && bad="$bad leak file;"
  status=$("$KEVO" script "$KEVO_SRC/tests/integration/escape_status.lua" "$dir/kevo.db" 2>&1)
  case "$status" in running*|error*) bad="$bad archive: $status;";; esac
  if [ -n "$bad" ]; then
    echo "FAIL $name:$bad"; sed 's/^/  | /' "$dir/log" | cut -c1-300 | tail -20; fail=1
  else
    printf 'ok   %-28s exit %s in %.1fs (run %ss), run %s\n' "$name" "$rc" "$took" "${ran:-?}" "$status"
  fi
done
# kevo list shows strategy files anyone may have written: names and first lines with terminal
# controls in them are shown escaped
mkdir -p "$tmp/list/strategies"
printf -- '-- x: \033]0;pwned\007\033[2Jhidden\r\n' > "$tmp/list/strategies/$(printf 'e\033[31mvil').lua"
(cd "$tmp/list" && "$KEVO" list > "$tmp/list/log" 2>&1)
if LC_ALL=C grep -qP '[\x1b\x07\r]' "$tmp/list/log" || ! grep -qF 'e\033[31mvil' "$tmp/list/log"; then
  echo "FAIL: kevo list printed terminal controls raw:"; cat -v "$tmp/list/log" | tail -5; fail=1
else
  echo "ok   kevo list escapes the terminal controls in strategy names and descriptions"
fi
if [ -s "$tmp/canary.log" ]; then echo "FAIL: the canary got requests:"; cat "$tmp/canary.log"; fail=1; fi
[ -n "${ESCAPE_ONLY:-}" ] || [ "$n" -ge 25 ] || { echo "FAIL: only $n cases in the corpus"; fail=1; }
echo "$n cases; canary on port $port untouched: $([ -s "$tmp/canary.log" ] && echo no || echo yes)"
[ $fail = 0 ] && echo "escape: all passed"
exit $fail
