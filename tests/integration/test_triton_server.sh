#!/usr/bin/env bash
# The Triton compile server as a process: killed mid-compile it is replaced and the next
# compile works; API keys in kevo's environment never reach it; the disk cache serves a second
# kevo process; a missing python or a python without Triton is reported, not crashed on.
set -u
if [ -z "${KEVO:-}" ] || [ -z "${KEVO_SRC:-}" ]; then echo "KEVO and KEVO_SRC must be set" >&2; exit 2; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

probe=$("$KEVO" script <(printf 'local t = require "kevo.triton"\nlocal ok, why = t.available()\nprint(ok and "yes" or why)\n') 2>&1)
if [ "$probe" != "yes" ]; then
  echo "SKIPPED: Triton is not available to kevo: $probe" >&2
  echo "  (run scripts/setup.sh, or set KEVO_PYTHON to a python3 with triton)" >&2
  exit 77
fi

# 1. A server killed mid-compile: the compile fails with E_WORKER, the next one works.
cat > "$tmp/kill.lua" <<'EOF'
local triton = require "kevo.triton"
triton.configure{servers = 1, disk_cache = false}
local pid = assert(triton.selftest{}).zygote
local f = assert(io.open(arg[1], "w")); f:write(pid, "\n"); f:close()
local slow = "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x_ptr):\n" ..
             "    for i in tl.static_range(100000000):\n        tl.store(x_ptr + i, 1.0)\n"
local m, msg, code = triton.compile(slow, {kernel = "k", signature = {"*fp32"}, timeout = 120})
print("first", code, msg)
assert(m == nil and code == "E_WORKER", msg)
local src = io.open(os.getenv("KEVO_SRC") .. "/recipes/vector_add/vector_add.py"):read("a")
local m2, info = triton.compile(src, {kernel = "vector_add", signature = {"*fp32", "*fp32", "*fp32", "i32"},
                                      constexprs = {BLOCK = 512}})
assert(m2, info)
local pid2 = assert(triton.selftest{}).zygote
assert(pid2 ~= pid, "the same server after a kill?")
print("second ok", info.name)
EOF
"$KEVO" script "$tmp/kill.lua" "$tmp/pid" >"$tmp/kill.out" 2>&1 &
kevo_pid=$!
for _ in $(seq 1 300); do [ -s "$tmp/pid" ] && break; sleep 0.1; done
sleep 1 # the slow compile is under way
if [ -s "$tmp/pid" ]; then kill -9 "$(cat "$tmp/pid")"; fi
wait "$kevo_pid"; rc=$?
if [ "$rc" = 0 ] && grep -q "killed by signal 9" "$tmp/kill.out" && grep -q "second ok" "$tmp/kill.out"; then
  ok "a server killed mid-compile is replaced"
else
  bad "a server killed mid-compile is replaced (exit $rc)"; sed 's/^/  | /' "$tmp/kill.out"
fi

# 2. The environment is scrubbed: no API key reaches the server (its own environment is kevo's
#    short list), and a compile process has no environment at all.
cat > "$tmp/env.lua" <<'EOF'
local triton = require "kevo.triton"
local st = assert(triton.selftest{})
print("compile process variables: " .. #st.env)
local f = assert(io.open("/proc/" .. st.zygote .. "/environ", "rb"))
for name in f:read("a"):gmatch("([^=%z]+)=[^%z]*") do print(name) end
f:close()
EOF
OPENAI_API_KEY=sk-secret ANTHROPIC_API_KEY=secret KEVO_TEST_SECRET=1 "$KEVO" script "$tmp/env.lua" >"$tmp/env.out" 2>&1
if grep -q "^PATH$" "$tmp/env.out" && grep -q "compile process variables: 0" "$tmp/env.out" &&
   ! grep -q -e "API_KEY" -e "KEVO_TEST_SECRET" "$tmp/env.out"; then
  ok "no API key reaches the server"
else
  bad "no API key reaches the server"; sed 's/^/  | /' "$tmp/env.out"
fi

# 3. The disk cache: a second kevo process gets the cubin without compiling.
cat > "$tmp/cache.lua" <<'EOF'
local triton = require "kevo.triton"
local src = io.open(os.getenv("KEVO_SRC") .. "/recipes/softmax/softmax.py"):read("a")
local m, info = triton.compile(src, {kernel = "softmax", signature = {"*fp32", "*fp32", "i32", "i32"},
                                     constexprs = {BLOCK = 1024}, num_warps = 4})
assert(m, info)
print(("cached %s %d"):format(tostring(info.cached), #m:cubin()))
EOF
KEVO_CACHE="$tmp/cache" "$KEVO" script "$tmp/cache.lua" >"$tmp/c1.out" 2>&1
KEVO_CACHE="$tmp/cache" "$KEVO" script "$tmp/cache.lua" >"$tmp/c2.out" 2>&1
if grep -q "cached false" "$tmp/c1.out" && grep -q "cached disk" "$tmp/c2.out" &&
   [ "$(awk '{print $3}' "$tmp/c1.out")" = "$(awk '{print $3}' "$tmp/c2.out")" ] &&
   ls "$tmp/cache/triton/"*.cubin >/dev/null 2>&1; then
  ok "the disk cache serves a second process"
else
  bad "the disk cache serves a second process"; sed 's/^/  | /' "$tmp/c1.out" "$tmp/c2.out"
fi

# 3b. The disk cache verifies what it serves: an altered cubin, or an entry copied under another
#     key (another source's hash), is a miss and is compiled afresh.
entry=$(ls "$tmp/cache/triton/"*.cubin | head -n 1)
printf '\177ELF-not-what-was-compiled' > "$entry"
KEVO_CACHE="$tmp/cache" "$KEVO" script "$tmp/cache.lua" >"$tmp/c3.out" 2>&1
sed 's/BLOCK = 1024/BLOCK = 512/' "$tmp/cache.lua" > "$tmp/cache512.lua"
KEVO_CACHE="$tmp/cache2" "$KEVO" script "$tmp/cache512.lua" >/dev/null 2>&1
KEVO_CACHE="$tmp/cache2" "$KEVO" script "$tmp/cache.lua" >/dev/null 2>&1
k512=$(ls -t "$tmp/cache2/triton/"*.json | tail -n 1); k1024=$(ls -t "$tmp/cache2/triton/"*.json | head -n 1)
cp "${k512%.json}.cubin" "${k1024%.json}.cubin"; cp "$k512" "$k1024"
KEVO_CACHE="$tmp/cache2" "$KEVO" script "$tmp/cache.lua" >"$tmp/c4.out" 2>&1
if grep -q "cached false" "$tmp/c3.out" && grep -q "cached false" "$tmp/c4.out"; then
  ok "the disk cache refuses an altered or moved entry"
else
  bad "the disk cache refuses an altered or moved entry"; sed 's/^/  | /' "$tmp/c3.out" "$tmp/c4.out"
fi

# 4. No python, or a python without Triton: a reason, not a crash; compile says E_UNSUPPORTED.
cat > "$tmp/none.lua" <<'EOF'
local triton = require "kevo.triton"
local ok, why = triton.available()
print("available", ok, why)
local m, msg, code = triton.compile("import triton\n", {kernel = "k", signature = {}})
print("compile", code, msg)
EOF
KEVO_PYTHON=/nonexistent/python3 "$KEVO" script "$tmp/none.lua" >"$tmp/n1.out" 2>&1
if grep -q "available	nil	python '/nonexistent/python3' not found" "$tmp/n1.out" &&
   grep -q "compile	E_UNSUPPORTED" "$tmp/n1.out"; then
  ok "a missing python is reported"
else
  bad "a missing python is reported"; sed 's/^/  | /' "$tmp/n1.out"
fi
plain=""
for p in /usr/bin/python3 /usr/local/bin/python3; do
  if [ -x "$p" ] && ! "$p" -c 'import triton' >/dev/null 2>&1; then plain=$p; break; fi
done
if [ -n "$plain" ]; then
  KEVO_PYTHON=$plain "$KEVO" script "$tmp/none.lua" >"$tmp/n2.out" 2>&1
  if grep -q "available	nil	.*No module named 'triton'" "$tmp/n2.out" &&
     grep -q "compile	E_UNSUPPORTED" "$tmp/n2.out"; then
    ok "a python without Triton is reported"
  else
    bad "a python without Triton is reported"; sed 's/^/  | /' "$tmp/n2.out"
  fi
else
  echo "note: every python3 here has Triton; the no-Triton case is not exercised"
fi

exit $fail
