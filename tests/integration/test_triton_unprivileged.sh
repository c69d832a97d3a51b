#!/usr/bin/env bash
# kevo itself run by an unprivileged user (issue 21): as root, this test becomes nobody (setpriv)
# and runs, as that user, the Triton attack corpus (test_triton_attacks.sh: the compile server,
# its zygote and confined compile processes, the canary, the fake API key, leftover processes)
# and the compile server's process tests (test_triton_server.sh: a killed server replaced, no
# API key in the server, the disk cache written and verified by that user). Then it checks that
# nobody wrote anything outside this test's own folder.
#
# What nobody needs is made reachable when it is not: the kevo binary (and a bundle's lib/) and
# the test files are copied into a folder of the test's own, and when the interpreter kevo uses
# lives where nobody cannot look (a pyenv under /root), the same Triton is used through a venv
# of the system's python3 of the same version (a .pth naming Triton's site-packages). When none
# of that can work, or the test does not run as root, it is skipped loudly (exit 77).
set -u
if [ -z "${KEVO:-}" ] || [ -z "${KEVO_SRC:-}" ]; then echo "KEVO and KEVO_SRC must be set" >&2; exit 2; fi
skip() { echo "SKIPPED: $*" >&2; exit 77; }
[ "$(id -u)" = 0 ] || skip "not root: this test switches to an unprivileged user; run as" \
  "$(id -un), test_triton_attacks.sh and test_triton_server.sh are themselves the unprivileged case"
command -v setpriv >/dev/null || skip "setpriv (util-linux) is missing"
probe=$("$KEVO" script <(printf 'local t = require "kevo.triton"\nlocal ok, why = t.available()\nprint(ok and "yes" or why)\n') 2>&1)
[ "$probe" = yes ] || skip "Triton is not available to kevo: $probe"

# (named as compile servers' folders are, which the root-run attack test's look for files written
# by nobody leaves out: the files this test's nobody writes are its own)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kevo-triton-unprivileged.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
touch "$tmp/stamp"
uid=65534
as_user() { setpriv --reuid=$uid --regid=$uid --clear-groups "$@"; }
as_user true 2>/dev/null || skip "setpriv cannot switch to uid $uid here"

# the kevo binary: a bundle's kevo-env needs its lib/ beside bin/
kevo=$KEVO
if ! as_user test -x "$kevo"; then
  bin=$(dirname "$(readlink -f "$KEVO")")
  mkdir -p "$tmp/kevo/bin"
  cp "$(readlink -f "$KEVO")" "$tmp/kevo/bin/$(basename "$KEVO")"
  [ -f "$bin/kevo" ] && cp "$bin/kevo" "$tmp/kevo/bin/kevo"
  [ -d "$bin/../lib" ] && cp -r "$bin/../lib" "$tmp/kevo/lib"
  kevo="$tmp/kevo/bin/$(basename "$KEVO")"
fi
# the tests and the files they read
src=$KEVO_SRC
if ! as_user test -r "$src/tests/triton_attacks/a01_tl_registry.py" -a -x "$src/tests/integration"; then
  src=$tmp/src
  mkdir -p "$src/tests/integration" "$src/recipes/vector_add"
  cp -r "$KEVO_SRC/tests/triton_attacks" "$src/tests/"
  cp "$KEVO_SRC"/tests/integration/{test_triton_attacks.sh,triton_attacks.lua,test_triton_server.sh} \
    "$src/tests/integration/"
  cp "$KEVO_SRC/recipes/vector_add/vector_add.py" "$src/recipes/vector_add/"
fi
# the interpreter, with Triton
py=$("$KEVO" script <(printf 'print(require("kevo.triton").sandbox().python)\n') 2>/dev/null)
upy=
if as_user test -x "$py" && as_user "$py" -c 'import triton' >/dev/null 2>&1; then
  upy=$py
else
  ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
  site=$("$py" -c 'import os, triton; print(os.path.dirname(os.path.dirname(triton.__file__)))' 2>/dev/null)
  for sys_py in /usr/bin/python3 /usr/local/bin/python3; do
    [ -n "$ver" ] && [ -n "$site" ] && [ -x "$sys_py" ] || continue
    [ "$("$sys_py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" = "$ver" ] || continue
    rm -rf "$tmp/venv"
    "$sys_py" -m venv --without-pip "$tmp/venv" >/dev/null 2>&1 || continue
    # ("/" and "/home" too: sys.path entries no compile process may be granted to read)
    printf '%s\n/\n/home\n' "$site" >"$tmp/venv/lib/python$ver/site-packages/kevo-triton.pth"
    if as_user "$tmp/venv/bin/python3" -c 'import triton' >/dev/null 2>&1; then
      upy=$tmp/venv/bin/python3
      echo "note: $py is out of uid $uid's reach; using Triton from $site through $sys_py ($ver)"
      break
    fi
  done
fi
[ -n "$upy" ] || skip "no python with Triton that uid $uid can run ($py is out of its reach, and" \
  "no system python3 of the same version reaches Triton's site-packages)"

mkdir -p "$tmp/home" "$tmp/tmp"
chown -R $uid:$uid "$tmp/home" "$tmp/tmp"
fail=0
for t in test_triton_attacks test_triton_server; do
  as_user env HOME="$tmp/home" TMPDIR="$tmp/tmp" KEVO="$kevo" KEVO_SRC="$src" KEVO_PYTHON="$upy" \
    bash "$src/tests/integration/$t.sh" >"$tmp/$t.out" 2>&1
  rc=$?
  sed 's/^/  | /' "$tmp/$t.out" | grep -v '^  | ok ' | head -40
  if [ $rc = 0 ]; then
    echo "ok   $t as uid $uid: $(grep -c '^ok' "$tmp/$t.out") checks$(sed -n 's/.*\(: attacks: .*\)/\1/p' "$tmp/$t.out")"
  else echo "FAIL $t as uid $uid (exit $rc)"; fail=1; fi
done
grep -q "unprivileged: attacks: [0-9]* ok, 0 failed" "$tmp/test_triton_attacks.out" ||
  { echo "FAIL the corpus did not run as uid $uid"; fail=1; }
new=$(find / -xdev \( -path /proc -o -path "$tmp" -o -path '*/kevo-triton-*' \) -prune -o \
  -user $uid -newer "$tmp/stamp" -print 2>/dev/null | head)
if [ -z "$new" ]; then echo "ok   nothing written as uid $uid outside the test's folder"
else echo "FAIL written as uid $uid: $new"; fail=1; fi
exit $fail
