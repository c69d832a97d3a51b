#!/usr/bin/env bash
# Triton compile latency: a warm kevo compile server (per candidate, after its one cold start)
# against a cold `python3 -m triton.tools.compile` process per candidate, in the same run, on
# the same kernels (recipes/vector_add and recipes/softmax seeds, distinct knob values so no
# cache answers), and a cold batch (a fresh kevo compiling them all at once, per candidate).
# Targets: a warm compile at most 100 ms, a cold batch of 24 at most 150 ms per candidate.
#
#   bench/triton_compile.sh [N_WARM=24] [N_COLD=4]   (N_COLD=0: no cold process, no tool)
#
# Env: KEVO (binary; default build/kevo), KEVO_PYTHON (default .venv/bin/python3, else python3).
# triton.tools.compile asks the CUDA driver for its launcher types, so on a machine without a
# GPU it cannot run; there the cold baseline is a fresh python process doing the tool's own
# steps (import triton, load the file, ASTSource, triton.compile for the same target), which is
# the tool minus writing its C stub, and the output says so.
set -euo pipefail
cd "$(dirname "$0")/.."
n_warm=${1:-24}
n_cold=${2:-4}
kevo=${KEVO:-build/kevo}
py=${KEVO_PYTHON:-}
if [ -z "$py" ]; then if [ -x .venv/bin/python3 ]; then py=.venv/bin/python3; else py=python3; fi; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export KEVO_SRC=$PWD

cat > "$tmp/warm.lua" <<'LUA'
local triton = require "kevo.triton"
local sys = require "kevo.sys"
local n = tonumber(arg[1])
triton.configure{disk_cache = false, servers = 1}
local t0 = sys.clock()
local ok, version = triton.available()
if not ok then io.stderr:write("Triton is not available: ", version, "\n") os.exit(77) end
local cold_start = sys.clock() - t0
local function read(p) local f = assert(io.open(os.getenv("KEVO_SRC") .. "/" .. p)) local s = f:read("a") f:close() return s end
local seeds = {
  {read("recipes/vector_add/vector_add.py"), "vector_add", {"*fp32", "*fp32", "*fp32", "i32"}},
  {read("recipes/softmax/softmax.py"), "softmax", {"*fp32", "*fp32", "i32", "i32"}},
}
-- where a warm compile's time goes (info.phases): the server's own steps, then the compile
-- process's (inside "child"); warm: that process's own warm-up before its request (off the
-- critical path), warm_cut: 1 when the request cut it short
local order = {"fork", "ready", "child", "ptxas", "reap", "handoff", "check", "ast_to_ir", "ttir",
               "ttgir", "llir", "ptx", "warm", "warm_cut"}
local detail = os.getenv("KEVO_BENCH_DETAIL") -- a file: one line per candidate
local out = detail and assert(io.open(detail, "w"))
local times, phases, per = {}, {}, {}
for _, block in ipairs{128, 256, 512, 1024, 2048, 4096} do
  for _, warps in ipairs{1, 2, 4, 8} do
    for _, s in ipairs(seeds) do
      if #times >= n then break end
      local t = sys.clock()
      local m, info = triton.compile(s[1], {kernel = s[2], signature = s[3],
        constexprs = {BLOCK = block}, num_warps = warps})
      assert(m, info)
      assert(info.cached == false)
      local ms = (sys.clock() - t) * 1000
      times[#times + 1] = ms
      per[s[2]] = per[s[2]] or {}
      table.insert(per[s[2]], ms)
      for k, v in pairs(info.phases or {}) do
        phases[k] = phases[k] or {}
        table.insert(phases[k], v)
      end
      if out then
        local f = {("%s BLOCK=%d num_warps=%d %.1f ms:"):format(s[2], block, warps, ms)}
        for _, k in ipairs(order) do
          local v = info.phases and info.phases[k]
          if v then f[#f + 1] = ("%s=%.1f"):format(k, v) end
        end
        out:write(table.concat(f, " "), "\n")
      end
    end
  end
end
if out then out:close() end
local function q(t, p) table.sort(t) return t[math.max(1, math.ceil(p * #t))] end
print(("warm %s %d %.1f %.1f %.1f %.1f"):format(version, #times, q(times, 0.5), q(times, 0.1),
                                               q(times, 0.9), cold_start * 1000))
local line = {}
for _, k in ipairs(order) do
  if phases[k] then line[#line + 1] = ("%s=%.1f"):format(k, q(phases[k], 0.5)) end
end
print("phases " .. table.concat(line, " "))
local kinds = {}
for _, s in ipairs(seeds) do
  local t = per[s[2]]
  if t then kinds[#kinds + 1] = ("%s %.1f (%d)"):format(s[2], q(t, 0.5), #t) end
end
print("kernels " .. table.concat(kinds, ", "))
LUA
"$kevo" script "$tmp/warm.lua" "$n_warm" >"$tmp/warm.out"
read -r _ version nw w50 w10 w90 start_ms <"$tmp/warm.out"
phases=$(sed -n 's/^phases //p' "$tmp/warm.out")
kernels=$(sed -n 's/^kernels //p' "$tmp/warm.out")

# A cold batch: a fresh kevo compiles n_warm distinct candidates at once (compile_many on the
# default number of servers), cold starts included; the wall time divided by the batch size.
cat > "$tmp/batch.lua" <<'LUA'
local triton = require "kevo.triton"
local sys = require "kevo.sys"
local n = tonumber(arg[1])
triton.configure{disk_cache = false}
local function read(p) local f = assert(io.open(os.getenv("KEVO_SRC") .. "/" .. p)) local s = f:read("a") f:close() return s end
local seeds = {
  {read("recipes/vector_add/vector_add.py"), "vector_add", {"*fp32", "*fp32", "*fp32", "i32"}},
  {read("recipes/softmax/softmax.py"), "softmax", {"*fp32", "*fp32", "i32", "i32"}},
}
local jobs = {} -- distinct kernels (not only distinct texts: Triton would not recompile those)
for _, block in ipairs{128, 256, 512, 1024, 2048, 4096} do
  for _, warps in ipairs{1, 2, 4, 8} do
    for _, s in ipairs(seeds) do
      if #jobs < n then
        jobs[#jobs + 1] = {src = s[1], kernel = s[2], signature = s[3],
                           constexprs = {BLOCK = block}, num_warps = warps}
      end
    end
  end
end
local t0 = sys.clock()
local res = triton.compile_many(jobs)
local dt = sys.clock() - t0
for i = 1, n do assert(res[i].module, res[i].error) end
print(("batch %d %.1f"):format(n, dt * 1000 / n))
LUA
batch=$("$kevo" script "$tmp/batch.lua" "$n_warm")
read -r _ nb b_ms <<<"$batch"

cat > "$tmp/steps.py" <<'PY'
# The steps of triton.tools.compile, without the driver query that needs a GPU.
import importlib.util, sys
import triton
from triton.backends.compiler import GPUTarget
path, name, block, warps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
spec = importlib.util.spec_from_file_location("k", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
fn = getattr(mod, name)
sig = {p.name: ("constexpr" if p.is_constexpr else None) for p in fn.params}
types = {"vector_add": ["*fp32", "*fp32", "*fp32", "i32"], "softmax": ["*fp32", "*fp32", "i32", "i32"]}[name]
for k, t in zip([k for k, v in sig.items() if v is None], types):
    sig[k] = t
src = triton.compiler.ASTSource(fn=fn, signature=sig, constexprs={"BLOCK": block})
ck = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": 3})
assert len(ck.asm["cubin"]) > 0
PY
# Triton 3.6's tool fails on an explicit --target (it compares the arch string with a number),
# so where `--target cuda:90:32` fails the tool is tried on the machine's own GPU (no --target).
tool_ok=0
targets=("--target=cuda:90:32" "")
[ "$n_cold" -gt 0 ] || targets=()  # N_COLD=0: kevo's own figures only
for target in "${targets[@]}"; do
  if TRITON_CACHE_DIR="$tmp/probe" "$py" -m triton.tools.compile recipes/vector_add/vector_add.py \
     --kernel-name vector_add --signature "*fp32:16, *fp32:16, *fp32:16, i32, 64" --grid "1,1,1" \
     --num-warps 1 ${target:+"$target"} --out-path "$tmp/probe_out" >/dev/null 2>"$tmp/probe.err"; then
    tool_ok=1 tool_target=$target
    break
  fi
  echo "python3 -m triton.tools.compile ${target:-(own GPU)} failed here: $(grep -v '^ ' "$tmp/probe.err" | tail -n 1)" >&2
done
cold=()
for i in $(seq 1 "$n_cold"); do
  blocks=(256 512 1024 2048 4096 128)
  block=${blocks[$(( (i - 1) % 6 ))]}
  if [ $((i % 2)) = 1 ]; then f=recipes/vector_add/vector_add.py k=vector_add
    sig="*fp32:16, *fp32:16, *fp32:16, i32, $block"
  else f=recipes/softmax/softmax.py k=softmax
    sig="*fp32:16, *fp32:16, i32, i32, $block"
  fi
  t0=$(date +%s%N)
  if [ $tool_ok = 1 ]; then
    TRITON_CACHE_DIR="$tmp/cold$i" "$py" -m triton.tools.compile "$f" --kernel-name $k \
      --signature "$sig" --grid "1,1,1" --num-warps 4 ${tool_target:+"$tool_target"} \
      --out-path "$tmp/out$i" >/dev/null
  else
    TRITON_CACHE_DIR="$tmp/cold$i" "$py" "$tmp/steps.py" "$f" $k "$block" 4
  fi
  t1=$(date +%s%N)
  cold+=($(( (t1 - t0) / 1000000 )))
done
cold_sorted=$(printf '%s\n' "${cold[@]}" | sort -n)
c50=$(printf '%s\n' "$cold_sorted" | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : 0)}')
own="for the machine's GPU"
baseline="python3 -m triton.tools.compile ${tool_target:-($own)}"
[ $tool_ok = 1 ] || baseline="cold python process, the tool's steps (the tool itself failed here: see above)"

echo "Triton $version, $(nproc) CPUs, target sm_90"
printf '%-58s %10s\n' "what" "ms"
printf '%-58s %10s\n' "kevo server cold start (import + warm-up, once per run)" "$start_ms"
printf '%-58s %10s\n' "kevo warm compile per candidate, median of $nw" "$w50"
printf '%-58s %10s\n' "kevo warm compile per candidate, p10 / p90" "$w10 / $w90"
printf '%-58s %10s\n' "kevo cold batch of $nb (fresh kevo), per candidate" "$b_ms"
echo "kevo warm compile per candidate, median per kernel: $kernels"
echo "warm compile's phases, ms (medians; server: fork ready child ptxas reap; child: handoff .." \
  "ptx; warm: the compile process's own warm-up before its request): $phases"
printf '%-58s %10s\n' "cold process per candidate, median of $n_cold" "$c50"
echo "cold baseline: $baseline (all: ${cold[*]} ms)"
awk -v c="$c50" -v w="$w50" -v b="$b_ms" 'BEGIN { r = c > 0 ? sprintf("%.1fx", c / w) : "(no cold process run)"
  printf "ratio cold/warm: %s; target warm <= 100 ms: %s; cold batch <= 150 ms: %s\n", r, (w <= 100 ? "met" : "NOT met"), (b <= 150 ? "met" : "NOT met") }'
