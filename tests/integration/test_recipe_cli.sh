#!/usr/bin/env bash
# kevo check and kevo list: summaries, exit codes, file:line:column errors, the search path.
set -u
fail=0
out=$(mktemp)
t() { # t NAME EXPECTED_RC CMD... : runs CMD, checks its exit code
  local name=$1 want=$2; shift 2
  "$@" >"$out" 2>&1; local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, want $want"; sed 's/^/  | /' "$out"; fail=1
  else echo "ok   $name"; fi
}
has() { grep -qF -- "$1" "$out" || { echo "FAIL: output lacks '$1'"; sed 's/^/  | /' "$out"; fail=1; }; }
# has, with the run of spaces between a name and its summary free (the column is as wide as the
# longest name listed)
hasw() { grep -qE -- "$1 +$2" "$out" || { echo "FAIL: output lacks '$1  $2'"; sed 's/^/  | /' "$out"; fail=1; }; }
lacks() { ! grep -qF -- "$1" "$out" || { echo "FAIL: output has '$1'"; fail=1; }; }
fx=$KEVO_SRC/tests/recipes

t "check --help" 0 "$KEVO" check --help;                   has "usage: kevo check"
t "check without args" 2 "$KEVO" check;                    has "usage: kevo check"
t "check bad option" 2 "$KEVO" check --frob x;             has "unknown option '--frob'"
t "check softmax by name" 0 "$KEVO" check softmax
has "softmax  $KEVO_SRC/recipes/softmax.yaml"
has "M=16384,N=8192 (benchmark) M=127,N=1000 M=1,N=8193 M=3,N=1"
has "input  x   f32 [M=16384, N=8192] 134217728 elements, 512.0 MiB, init normal"
has "bytes 8*M*N = 1.07 GB, flops 5*M*N = 671 MFLOP"
has "BLOCK {128, 256, 512, 1024} x VEC {1, 2, 4} = 12 points"
has "launch at $KEVO_SRC/recipes/softmax/reference.cu:4"
t "check two recipes" 0 "$KEVO" check "$KEVO_SRC/recipes/vector_add.yaml" "$fx/good.yaml"
has "BLOCK {128, 256, 512, 1024} x UNROLL {1, 2, 4, 8} = 16 points"
has "launch at $fx/good.yaml:24"
has "input  idx i32 [M=64] 64 elements, 256 B, init randint(0, N)"
t "check malformed: dtype" 2 "$KEVO" check "$fx/bad_dtype.yaml"
has "$fx/bad_dtype.yaml:12:14: outputs.y.dtype: unknown dtype 'f33' (one of f32, f16, bf16, f64, i32, i64, u8, i8, bool, f8e4m3, f8e5m2)"
t "check malformed: syntax" 2 "$KEVO" check -q "$fx/bad_syntax.yaml"
has "$fx/bad_syntax.yaml:4:7: YAML syntax error"
t "check malformed: launch chunk" 2 "$KEVO" check "$fx/bad_launch_syntax.yaml"
has "$fx/bad_launch_syntax.yaml:24: seeds[0].launch: unexpected symbol near '='"
t "check one good, one bad" 2 "$KEVO" check "$fx/good.yaml" "$fx/bad_version.yaml"
has "bad_version.yaml:1:7: kevo: unsupported recipe version 2"; has "1 of 2 recipes failed"
t "check quiet prints nothing" 0 "$KEVO" check -q softmax vector_add
[ -s "$out" ] && { echo "FAIL: -q printed"; fail=1; }
t "check unknown name" 2 "$KEVO" check no_such_recipe; has "recipe 'no_such_recipe' not found"
t "check missing path" 2 "$KEVO" check /nonexistent/x.yaml; has "/nonexistent/x.yaml"

tmp=$(mktemp -d)
t "list --help" 0 "$KEVO" list --help;                     has "usage: kevo list"
t "list bad arg" 2 "$KEVO" list --frob
cd "$tmp" || exit 1
t "list from elsewhere" 0 "$KEVO" list
hasw softmax "Row-wise softmax"; hasw vector_add Elementwise
mkdir -p "$tmp/recipes" "$tmp/strategies" "$tmp/mine"
cp "$fx/bad_dtype.yaml" "$tmp/recipes/"
sed 's/^name: good/name: mine/' "$fx/good.yaml" > "$tmp/mine/softmax.yaml"
cp -r "$fx/good" "$tmp/mine/"
printf -- '-- greedy: refine the best candidate\nreturn {}\n' > "$tmp/strategies/greedy.lua"
printf 'return {}\n' > "$tmp/strategies/bare.lua"
KEVO_RECIPES="$tmp/mine" t "list with local dirs" 0 "$KEVO" list
hasw bad_dtype "\(does not load"; hasw softmax "A small recipe"; lacks "Row-wise softmax"
hasw greedy "refine the best candidate \(strategies/greedy.lua\)"; has "bare"
KEVO_RECIPES="$tmp/mine" t "list --json" 0 "$KEVO" list --json
has "\"name\":	\"greedy\""; has "\"error\":	\"recipes/bad_dtype.yaml:12:14: outputs.y.dtype"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert {r["name"] for r in d["recipes"]} >= {"softmax","vector_add","bad_dtype"}, d' "$out" \
   || { echo "FAIL: list --json is not the JSON expected"; fail=1; }
KEVO_RECIPES="$tmp/mine" t "KEVO_RECIPES comes first" 0 "$KEVO" check softmax; has "mine  $tmp/mine/softmax.yaml"
mkdir -p "$tmp/empty" && cd "$tmp/empty" || exit 1
t "list from an empty directory" 0 "$KEVO" list; has "strategies:"
if ! "$KEVO" list --json | grep -q '"source":	"embedded"'; then has "(none yet)"; fi
cd / || exit 1
rm -rf "$tmp" "$out"
[ $fail = 0 ] && echo "recipe cli: all passed"
exit $fail
