#!/usr/bin/env bash
# The Triton attack corpus (tests/triton_attacks, driven by triton_attacks.lua): every attack
# meets its expected outcome, and across all of them no file outside a compile's work
# directory changes (a canary directory, /tmp, anything the unprivileged user could write), the
# fake API key in kevo's environment appears in no output, no process outlives kevo, later
# honest candidates get the same cubin, and the compile server is never restarted. Runs as
# kevo does in CI (root: the server becomes nobody) and as root with the user kept (the other
# walls alone must hold); run by another user, once as that user (test_triton_unprivileged.sh
# does that as nobody when the tests run as root).
set -u
if [ -z "${KEVO:-}" ] || [ -z "${KEVO_SRC:-}" ]; then echo "KEVO and KEVO_SRC must be set" >&2; exit 2; fi
# Each compile process warms up before its request (the server's own kernel) and two wait per
# server, as on a machine with CPUs to spare: that is the path the attacks must meet here too.
export KEVO_TRITON_PREFAULT=1
probe=$("$KEVO" script <(printf 'local t = require "kevo.triton"\nlocal ok, why = t.available()\nprint(ok and "yes" or why)\n') 2>&1)
if [ "$probe" != "yes" ]; then
  echo "SKIPPED: Triton is not available to kevo: $probe" >&2
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

secret="sk-kevo-fake-$RANDOM$RANDOM$RANDOM"
canary="$tmp/canary"
mkdir -p "$canary" "$tmp/cache"
echo "canary" > "$canary/file"
chmod 644 "$canary/file"
state() { # everything an attack could change about the canary
  (cd "$canary" && ls -l --time-style=+%s . && stat -c '%a %u %g %s %Y' file && sha256sum file &&
   python3 -c 'import os; print(sorted(os.listxattr("file")))')
}
state > "$tmp/canary.before"
touch "$tmp/stamp"
sleep 1

run() { # run NAME USER_MODE [command prefix...]
  local name=$1 user=$2
  shift 2
  mkdir -p "$tmp/t_$name" && chmod 777 "$tmp/t_$name"
  env OPENAI_API_KEY="$secret" ANTHROPIC_API_KEY="$secret" KEVO_FAKE_API_KEY="$secret" \
    KEVO_CACHE="$tmp/cache" TMPDIR="$tmp/t_$name" "$@" "$KEVO" script \
    "$KEVO_SRC/tests/integration/triton_attacks.lua" "$KEVO_SRC/tests/triton_attacks" "$canary" \
    "$tmp/cache" "$user" >"$tmp/out_$name" 2>&1
  local rc=$?
  grep -q "^FAIL" "$tmp/out_$name" && grep "^FAIL" "$tmp/out_$name" | sed 's/^/  | /'
  if [ $rc = 0 ]; then ok "$name: $(tail -n 1 "$tmp/out_$name")"; else
    bad "$name: the corpus (exit $rc)"; tail -n 5 "$tmp/out_$name" | sed 's/^/  | /'; fi
  sleep 0.5
  local left=""
  for c in /proc/[0-9]*/cmdline; do
    if { tr '\0' ' ' < "$c"; } 2>/dev/null | grep -q "$tmp/t_$name"; then left="$left ${c#/proc/}"; fi
  done
  if [ -z "$left" ]; then ok "$name: no process outlives kevo"; else bad "$name: processes left:$left"; fi
}

if [ "$(id -u)" = 0 ]; then
  run root drop
  run root_keep_user keep
else
  run unprivileged keep
fi
state > "$tmp/canary.after"
if diff "$tmp/canary.before" "$tmp/canary.after" >/dev/null; then ok "the canary directory is unchanged"; else
  bad "the canary directory changed"; diff "$tmp/canary.before" "$tmp/canary.after" | sed 's/^/  | /'; fi
if ls /tmp/kevo-triton-pwned-* >/dev/null 2>&1 || [ -e "$tmp/cache/poison.cubin" ]; then
  bad "an attack created a file outside its work directory"; else ok "no file created in /tmp or the cache"; fi
if [ "$(id -u)" = 0 ]; then
  # (compile servers' own work directories, this run's and any other kevo's, are nobody's)
  new=$(find / -xdev \( -path /proc -o -path "$tmp" -o -path '*/kevo-triton-*' \) -prune -o \
    -user 65534 -newer "$tmp/stamp" -print 2>/dev/null | head)
  if [ -z "$new" ]; then ok "nothing on the filesystem written as nobody"; else bad "written as nobody: $new"; fi
fi
if grep -rqF "$secret" "$tmp"/out_* "$tmp/cache" 2>/dev/null; then bad "the fake API key appears in an output"; else
  ok "the fake API key appears in no output"; fi
exit $fail
