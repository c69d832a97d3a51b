#!/usr/bin/env bash
# kevo export on a synthetic search archive whose best kernel is a real CUDA softmax: every file
# written; the cubin recompiled by NVRTC (an ELF for sm_90); kernel_launch.h compiles against the
# CUDA headers; launch.json and provenance.json parse and hold the resolved plan, the parent
# chain and the measurement; refusals (no verified kernel 1, no such run 2, bad usage 2).
set -u
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/out
t() {
  local name=$1 want=$2; shift 2
  "$@" >"$out" 2>&1; local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, want $want"; sed 's/^/  | /' "$out"; fail=1
  else echo "ok   $name"; fi
}
has() { grep -qF -- "$1" "$out" || { echo "FAIL: output lacks '$1'"; sed 's/^/  | /' "$out" | head -30; fail=1; }; }

db=$tmp/kevo.db
"$KEVO" script "$KEVO_SRC/tests/integration/report_fixture.lua" "$db" >"$tmp/fixture" || { echo "FAIL: fixture"; exit 1; }
read -r _ run1 _ best1 < <(sed -n 1p "$tmp/fixture")
read -r _ run2 _ _ < <(sed -n 2p "$tmp/fixture")
cat > "$tmp/source.lua" <<'LUA'
local db = assert(require("kevo.archive").open(arg[1], {readonly = true}))
io.write(db:best(tonumber(arg[2])).candidate_source)
LUA
"$KEVO" script "$tmp/source.lua" "$db" "$run1" > "$tmp/best.cu"

dir=$tmp/export
# from the source tree, so the recipe's stored relative path resolves as it did for the run
t "export" 0 env -C "$KEVO_SRC" "$KEVO" export "$run1" "$dir" --db "$db"
has "exported run $run1's best kernel to $dir"
for f in kernel.cu kernel.cubin reference.cubin launch.json kernel_launch.h torch_ext.py make_test_vectors.py provenance.json README.md; do
  [ -s "$dir/$f" ] || { echo "FAIL: $f missing or empty"; fail=1; }
done
cmp -s "$dir/kernel.cu" "$tmp/best.cu" && echo "ok   kernel.cu is the stored source, byte for byte" || { echo "FAIL: kernel.cu differs"; fail=1; }
[ "$(head -c 4 "$dir/kernel.cubin" | od -An -c | tr -d ' ')" = '177ELF' ] && echo "ok   kernel.cubin is an ELF" || { echo "FAIL: cubin not ELF"; fail=1; }
grep -qa softmax_rows "$dir/kernel.cubin" && echo "ok   the cubin has the entry" || { echo "FAIL: entry missing from cubin"; fail=1; }

cuda_inc=${CUDA_HOME:-/usr/local/cuda}/include
if [ -f "$cuda_inc/cuda.h" ]; then
  printf '#include "kernel_launch.h"\nint use(void) { kevo_kernel k; return (int)kevo_kernel_load(&k, 0); }\n' > "$tmp/use.c"
  t "kernel_launch.h compiles" 0 gcc -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$cuda_inc" -I"$dir" "$tmp/use.c"
else
  echo "FAIL: no cuda.h under $cuda_inc (the CUDA toolkit is a build dependency)"; fail=1
fi
t "python files compile" 0 python3 -m py_compile "$dir/torch_ext.py" "$dir/make_test_vectors.py"

python3 - "$dir" "$run1" "$best1" <<'PY' || fail=1
import json, os, sys
d, run, best = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
L = json.load(open(os.path.join(d, "launch.json")))
assert L["lang"] == "cuda" and L["arch"] == "sm_90" and L["knobs"] == {"BLOCK": 128}, L
k = L["plan"]["kernels"][0]
assert k["name"] == "softmax_rows" and k["grid"] == [16384, 1, 1] and k["block"] == [128, 1, 1], k
assert k["args"] == [{"buf": "x"}, {"buf": "y"}, {"i32": 16384}, {"i32": 8192}], k["args"]
assert [s["label"] for s in L["shapes"]] == ["M=16384,N=8192", "M=127,N=1000", "M=1,N=8193", "M=3,N=1"]
small = L["shapes"][1]
assert small["plan"]["kernels"][0]["grid"] == [127, 1, 1] and small["dims"]["x"] == [127, 1000]
assert small["reference_plan"]["kernels"][0]["name"] == "softmax"
assert [t["name"] for t in L["tensors"]] == ["x", "y"] and "kevo:launch" not in L["launch_chunk"]
P = json.load(open(os.path.join(d, "provenance.json")))
assert P["run"]["id"] == run and P["candidate"]["id"] == best
chain = [c["candidate"] for c in P["candidate"]["parent_chain"]]
assert chain[0] == 1 and chain[-1] == best and len(chain) > 3, chain
assert P["measured_on"]["device"] == "NVIDIA H200" and P["measured_on"]["driver"] == 13000
assert P["evaluation"]["verdict"] == "ok" and abs(P["evaluation"]["speedup"] - 5.7166) < 1e-3
assert P["recipe"]["hash"] == "ab" * 32 and P["cubin"]["compiler"] == "nvrtc"
assert P["cubin"]["bytes"] == os.path.getsize(os.path.join(d, "kernel.cubin"))
assert P["exported_by"]["kevo_version"]
assert P["notes"] == [], P["notes"]
print("ok   launch.json and provenance.json")
PY
grep -q "kevo_kernel_load" "$dir/README.md" && grep -q "make_test_vectors.py" "$dir/README.md" && echo "ok   README" || { echo "FAIL: README"; fail=1; }

t "again into the same directory" 0 env -C "$KEVO_SRC" "$KEVO" export "$run1" "$dir" --db "$db"
t "no verified kernel" 1 "$KEVO" export "$run2" "$tmp/e2" --db "$db"
has "has no verified kernel"
[ -e "$tmp/e2" ] && { echo "FAIL: a refused export made its directory"; fail=1; }
t "no such run" 2 "$KEVO" export 999 "$tmp/e3" --db "$db"
t "no archive" 2 "$KEVO" export 1 "$tmp/e4" --db "$tmp/missing.db"
t "missing directory argument" 2 "$KEVO" export "$run1" --db "$db"
touch "$tmp/afile"
t "directory is a file" 1 "$KEVO" export "$run1" "$tmp/afile" --db "$db"
has "a file has that name"
exit $fail
