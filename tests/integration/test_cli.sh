#!/usr/bin/env bash
# The command line: help, exit codes, kevo script.
set -u
fail=0
t() { # t NAME EXPECTED_RC CMD... : runs CMD, checks its exit code
  local name=$1 want=$2; shift 2
  "$@" >/tmp/kevo-cli.$$ 2>&1; local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, want $want"; sed 's/^/  | /' /tmp/kevo-cli.$$; fail=1
  else echo "ok   $name"; fi
}
has() { grep -q -- "$1" /tmp/kevo-cli.$$ || { echo "FAIL: output lacks '$1'"; fail=1; }; }

t "no args is usage" 2 "$KEVO";                        has "usage: kevo"
t "--help" 0 "$KEVO" --help;                           has "script"
t "unknown command" 2 "$KEVO" frobnicate;              has "unknown command"
t "version" 0 "$KEVO" version;                         has "Lua 5.4"
t "script --help" 0 "$KEVO" script --help;             has "usage: kevo script"
t "help script" 0 "$KEVO" help script;                 has "usage: kevo script"
t "script missing file" 2 "$KEVO" script /nonexistent.lua
tmp=$(mktemp -d)
printf 'local kevo = require "kevo"\nprint(kevo.version, ...)\nreturn 0\n' > "$tmp/ok.lua"
t "script runs with args" 0 "$KEVO" script "$tmp/ok.lua" a b; has "a	b"
printf 'error("boom")\n' > "$tmp/err.lua"
t "script error exits 1" 1 "$KEVO" script "$tmp/err.lua"; has "boom"
printf 'local x = \n' > "$tmp/syntax.lua"
t "script syntax error exits 2" 2 "$KEVO" script "$tmp/syntax.lua"; has "syntax.lua:2"
printf 'return 3\n' > "$tmp/rc.lua"
t "script exit code" 3 "$KEVO" script "$tmp/rc.lua"
printf 'local f = io.open(arg[1], "w") f:write("x") f:close() os.exit(0)\n' > "$tmp/io.lua"
t "script is trusted (io, os)" 0 "$KEVO" script "$tmp/io.lua" "$tmp/out.txt"
rm -rf "$tmp" /tmp/kevo-cli.$$
[ $fail = 0 ] && echo "cli: all passed"
exit $fail
