-- kevo.triton: compiling the Triton seeds for sm_90 without a GPU, the allow-list's refusals
-- (each with its line), compile diagnostics, the cache, a compile that hangs, the sandbox.
local triton = require "kevo.triton"
triton.configure{disk_cache = false} -- the disk cache is tested in integration/test_triton_server

local ok, version = triton.available()
if not ok then
  io.stderr:write("SKIPPED: Triton is not available to kevo: ", tostring(version),
                  "\n  (run scripts/setup.sh, or set KEVO_PYTHON to a python3 with triton)\n")
  return 77
end
print("triton " .. version)

local src_root = assert(os.getenv("KEVO_SRC"), "KEVO_SRC is not set")
local function read(path)
  local f = assert(io.open(src_root .. "/" .. path))
  local s = f:read("a")
  f:close()
  return s
end

-- The seeds compile for sm_90, and the info says how to launch them.
local vadd = read("recipes/vector_add/vector_add.py")
local m, info = triton.compile(vadd, {kernel = "vector_add", arch = "sm_90", num_warps = 4,
  signature = {"*fp32", "*fp32", "*fp32", "i32"}, constexprs = {BLOCK = 1024}})
assert(m, info)
assert(tostring(m):find("kevo.triton.Module (vector_add", 1, true))
local cubin = m:cubin()
assert(#cubin > 1000 and cubin:sub(1, 4) == "\127ELF", "a cubin is an ELF file")
assert(info.name == "vector_add" and info.num_warps == 4 and info.threads == 128, info.name)
assert(info.arch == "sm_90" and info.triton_version == version)
assert(#info.params == 4 and info.params[1].name == "a_ptr" and info.params[4].type == "i32")
assert(#info.extra_args == 2 and info.extra_args[1].name == "global_scratch" and
       info.extra_args[2].name == "profile_scratch", "Triton 3.x appends two scratch pointers")
assert(info.extra_args[1].bytes_per_program == 0, "vector_add needs no global scratch")
assert(info.constexprs.BLOCK == 1024 and type(info.shared) == "number")
assert(info.cached == false and info.ms > 0 and #info.hash == 64)
m:close()
m:close() -- idempotent
assert(not pcall(m.cubin, m), "a closed module raises")

-- The same request again is a memory cache hit; another knob value is not.
local m2, info2 = triton.compile(vadd, {kernel = "vector_add", arch = "sm_90", num_warps = 4,
  signature = {"*fp32", "*fp32", "*fp32", "i32"}, constexprs = {BLOCK = 1024}})
assert(m2 and info2.cached == "memory" and info2.hash == info.hash and m2:cubin() == cubin)
local m3, info3 = triton.compile(vadd, {kernel = "vector_add", num_warps = 8,
  signature = {a_ptr = "*bf16", b_ptr = "*bf16", c_ptr = "*bf16", n = "i32"},
  constexprs = {BLOCK = 2048}})
assert(m3, info3)
assert(info3.cached == false and info3.threads == 256 and info3.params[1].type == "*bf16")

local softmax = read("recipes/softmax/softmax.py")
for _, w in ipairs{4, 8} do
  local sm, sinfo = triton.compile(softmax, {kernel = "softmax", num_warps = w,
    signature = {"*fp32", "*fp32", "i32", "i32"}, constexprs = {BLOCK = 2048}})
  assert(sm, sinfo)
  assert(sinfo.name == "softmax" and sinfo.threads == 32 * w and #sinfo.params == 4)
end

-- Several at once: results in order, failures in place.
local many = triton.compile_many{
  {src = vadd, kernel = "vector_add", signature = {"*fp32", "*fp32", "*fp32", "i32"},
   constexprs = {BLOCK = 256}},
  {src = "import os\n", kernel = "k", signature = {}},
  {src = softmax, kernel = "softmax", signature = {"*fp32", "*fp32", "i32", "i32"},
   constexprs = {BLOCK = 512}, num_warps = 2},
}
assert(#many == 3)
assert(many[1].module and many[1].info.name == "vector_add", many[1].error)
assert(not many[2].module and many[2].code == "E_COMPILE" and many[2].info.diagnostics[1].line == 1)
assert(many[3].module and many[3].info.threads == 64, many[3].error)

-- The allow-list: every refusal is E_COMPILE with the line of the offence.
local head = "import triton\nimport triton.language as tl\n"
local function kernel(body, extra_params)
  return head .. "\n\n@triton.jit\ndef k(x_ptr" .. (extra_params or "") .. "):\n" .. body
end
local refusals = {
  {"import os\n", 1, "import of 'os'"},
  {head .. "from os import path\n", 3, "import from 'os'"},
  {head .. "import subprocess as triton2\n", 3, "import of 'subprocess'"},
  {head .. "x = __import__('os')\n", 3, "__import__"},
  {kernel("    y = __import__('os')\n"), 7, "__import__"},
  {kernel("    exec('import os')\n"), 7, "'exec'"},
  {kernel("    eval('1')\n"), 7, "'eval'"},
  {kernel("    f = open('/etc/passwd')\n"), 7, "'open'"},
  {kernel("    y = getattr(x_ptr, '__class__')\n"), 7, "'getattr'"},
  {kernel("    y = x_ptr.__class__\n"), 7, "__class__"},
  {kernel("    y = k.fn.__globals__\n"), 7, "__globals__"},
  {kernel("    y = __builtins__\n"), 7, "__builtins__"},
  {kernel("    y = triton.runtime.cache.os.system('id')\n"), 7, "triton.runtime"},
  {kernel("    y = tl.core\n"), 7, "triton.language.core"},
  {kernel("    y = triton.compile('/etc/passwd')\n"), 7, "triton.compile"},
  {head .. "from triton import compile\n", 3, "from triton import compile"},
  {kernel("    t = tl\n"), 7, "module 'tl'"},
  {kernel("    pass\n", ", B: tl.constexpr = open('x')"), 6, "default"},
  {head .. "print('hello')\n", 3, "not allowed at top level"},
  {head .. "if True:\n    X = 1\n", 3, "not allowed at top level"},
  {head .. "class C:\n    pass\n", 3, "not allowed at top level"},
  {head .. "def k(x):\n    pass\n", 3, "@triton.jit"},
  {head .. "@triton.autotune\ndef k(x):\n    pass\n", 3, "@triton.jit"},
  {head .. "@triton.jit\n@triton.jit\ndef k(x):\n    pass\n", 4, "exactly one decorator"},
  {head .. "X = 2 ** 100000\n", 3, "literal"},
  {kernel("    y = x_ptr +\n"), 7, "syntax error"},
}
for i, case in ipairs(refusals) do
  local src, line, pattern = case[1], case[2], case[3]
  local mod, msg, code, dinfo = triton.compile(src, {kernel = "k", signature = {"*fp32"}})
  assert(mod == nil and code == "E_COMPILE", ("refusal %d compiled: %s"):format(i, src))
  local d = dinfo.diagnostics[1]
  assert(d and d.line == line,
         ("refusal %d: line %s, want %d (%s)"):format(i, d and d.line, line, msg))
  assert(msg:find(pattern, 1, true), ("refusal %d: '%s' lacks '%s'"):format(i, msg, pattern))
  assert(msg:find("candidate.py:" .. line .. ":", 1, true), msg)
end
-- What is allowed: constants, tl.constexpr constants, the launch string, math, from-imports.
local fine = "\"\"\"kevo:launch\nreturn {}\n\"\"\"\nimport math\nimport triton\n" ..
             "from triton import language as tl\nPLAIN = 2.5\nSCALE = tl.constexpr(2.5)\n" ..
             "KEVO_LAUNCH = '''return {}'''\n\n\n@triton.jit\ndef k(x_ptr, n, B: tl.constexpr = "
               .. "128):\n" ..
             "    offs = tl.program_id(0) * B + tl.arange(0, B)\n" ..
             "    x = tl.load(x_ptr + offs, mask=offs < n)\n" ..
             "    tl.store(x_ptr + offs, x * SCALE, mask=offs < n)\n"
local fm, finfo = triton.compile(fine, {kernel = "k", signature = {x_ptr = "*fp32", n = "i32"}})
assert(fm, finfo)
assert(finfo.constexprs.B == 128, "a constexpr's default applies")

-- Compile errors carry the candidate's line and column.
local bad = vadd:gsub("a %+ b, mask", "a + b + undefined_name, mask")
local bm, bmsg, bcode, binfo = triton.compile(bad, {kernel = "vector_add", name = "vadd.py",
  signature = {"*fp32", "*fp32", "*fp32", "i32"}, constexprs = {BLOCK = 1024}})
local want_line = 0
for n, l in (bad .. "\n"):gmatch("()([^\n]*)\n") do
  want_line = want_line + 1
  if l:find("undefined_name", 1, true) then break end
end
assert(bm == nil and bcode == "E_COMPILE", bmsg)
assert(binfo.diagnostics[1].line == want_line and binfo.diagnostics[1].col > 1, bmsg)
assert(bmsg:find("vadd.py:" .. want_line, 1, true) and bmsg:find("undefined_name"), bmsg)
local _, amsg = triton.compile(vadd, {kernel = "vector_add", constexprs = {BLOCK = 1000},
  signature = {"*fp32", "*fp32", "*fp32", "i32"}})
assert(amsg:find("power of 2"), amsg)
local _, nmsg = triton.compile(vadd, {kernel = "nope", signature = {}})
assert(nmsg:find("no @triton.jit function named 'nope'"), nmsg)
local _, smsg = triton.compile(vadd, {kernel = "vector_add", signature = {"*fp32"},
  constexprs = {BLOCK = 64}})
assert(smsg:find("takes 4 non%-constexpr parameters"), smsg)
local _, cmsg = triton.compile(vadd, {kernel = "vector_add", constexprs = {BLOCK = 64, NOPE = 1},
  signature = {"*fp32", "*fp32", "*fp32", "i32"}})
assert(cmsg:find("'NOPE' is not a tl.constexpr parameter"), cmsg)

-- Misuse raises.
assert(not pcall(triton.compile, vadd, {kernel = "vector_add", signature = {}, bogus = 1}))
assert(not pcall(triton.compile, vadd, {signature = {}}))
assert(not pcall(triton.compile, vadd, {kernel = "vector_add", signature = {}, num_warps = 3}))
assert(not pcall(triton.compile, vadd, {kernel = "vector_add", signature = {print}}))
assert(not pcall(triton.compile, vadd, {kernel = "vector_add", signature = {1, x = 2}}))
assert(not pcall(triton.compile_many, {{kernel = "k", signature = {}}}), "src is required")
assert(not pcall(triton.configure, {servers = 99, disk_cache = true}),
  "checked before anything changes")

-- The sandbox from inside a compile process: no environment, a session of its own, not root,
-- and no write anywhere, not even its own directory (tests/triton_attacks go further).
local sb = triton.sandbox()
print("sandbox: " .. sb.note)
local st = assert(triton.selftest{})
assert(#st.env == 0, "a compile process has an environment: " .. table.concat(st.env, " "))
assert(st.sid == st.pid, "a compile process is not in a session of its own")
assert(st.pid ~= st.zygote)
local whoami = io.popen("id -u"):read("l")
if whoami == "0" then
  assert(st.uid == 65534, "as root, a compile runs as nobody, not " .. st.uid)
end
if sb.landlock > 0 then
  local inside = assert(triton.selftest{write = "probe.txt"})
  assert(inside.write:find("^denied"), inside.write)
  local outside = os.tmpname()
  local r = assert(triton.selftest{write = outside})
  assert(r.write:find("^denied"), "Landlock let a compile write " .. outside .. ": " .. r.write)
  local f = assert(io.open(outside))
  assert(f:read("a") == "", "the file outside was written")
  f:close()
  os.remove(outside)
else
  io.stderr:write("NOTE: no Landlock on this kernel; the write-outside check is skipped\n")
end

-- A compile that never ends hits its deadline; the server is replaced and the next one works.
local hang = kernel("    for i in tl.static_range(100000000):\n        tl.store(x_ptr + i, 1.0)\n")
local t0 = os.clock and require("kevo.sys").clock()
local hm, hmsg, hcode = triton.compile(hang, {kernel = "k", signature = {"*fp32"}, timeout = 2})
local took = require("kevo.sys").clock() - t0
assert(hm == nil and hcode == "E_TIMEOUT", hmsg)
assert(took < 20, "the deadline was not kept: " .. took)
local after, ainfo = triton.compile(vadd, {kernel = "vector_add", num_warps = 2,
  signature = {"*fp32", "*fp32", "*fp32", "i32"}, constexprs = {BLOCK = 128}})
assert(after and ainfo.cached == false, tostring(ainfo.cached))

triton.stop()
assert(triton.available(), "servers start again after stop")
print("triton ok")
