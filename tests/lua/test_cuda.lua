-- kevo.cuda with real NVRTC (no GPU needed): the API, misuse, compile_many, and the whole
-- adversarial corpus (tests/adversarial): every kernel compiles but the compile_error one,
-- which fails at its marked line, and every launch chunk resolves on every recipe shape.

-- Run with a cache directory of our own, so the test neither reads nor fills the user's.
if not os.getenv("KEVO_CACHE") then
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p '" .. dir .. "'"))
  local ok, how, code = os.execute(string.format("KEVO_CACHE='%s' '%s' script '%s'", dir,
    assert(os.getenv("KEVO"), "KEVO is not set"), arg[0]))
  os.execute("rm -rf '" .. dir .. "'")
  if not ok then
    error("test_cuda.lua failed (" .. tostring(how) .. " " .. tostring(code) .. ")")
  end
  return
end

local cuda = require "kevo.cuda"

local major, minor = cuda.version()
assert(math.type(major) == "integer" and major >= 12 and math.type(minor) == "integer")
assert(cuda.default_arch():match("^sm_%d+"))

local VADD = [[
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
]]

-- a good compile: module and info
local m, info = cuda.compile(VADD, {name = "vadd.cu", arch = "sm_90"})
assert(m, info)
assert(m:cubin():sub(1, 4) == "\127ELF")
assert(#m:cubin() == info.cubin_size)
assert(m.hash == info.hash and #m.hash == 64 and m.arch == "sm_90")
assert(info.ok == true and info.arch == "sm_90" and type(info.ms) == "number")
assert(#info.diagnostics == 0 and type(info.log) == "string")
assert(#info.kernels == 1 and info.kernels[1].name == "vector_add")
assert(info.kernels[1].registers > 0 and info.kernels[1].spill_stores == 0)
assert(tostring(m):find("kevo.cuda.Module (sm_90, 1 kernels", 1, true))
local again = m:info()
assert(again.hash == info.hash and again.kernels[1].name == "vector_add")
m:close()
m:close() -- idempotent
assert(tostring(m) == "kevo.cuda.Module (closed)")
assert(not pcall(m.cubin, m))
assert(not pcall(function() return m.hash end))

-- the same source again is a cache hit with the same hash
do
  local m2 <close>, info2 = assert(cuda.compile(VADD, {name = "vadd.cu", arch = "sm_90"}))
  assert(info2.cached == true and info2.hash == info.hash)
end

-- a compile error: nil, message with the line, code, info
local src_err = "extern \"C\" __global__ void f(float* o) {\n  int unused;\n  o[0] = nope + 1;\n}\n"
local none, msg, code, einfo = cuda.compile(src_err, {name = "bad.cu"})
assert(none == nil and code == "E_COMPILE", msg)
assert(msg:find("^E_COMPILE: bad.cu:3:10: identifier \"nope\" is undefined"), msg)
assert(einfo.ok == false and einfo.log:find("bad.cu(3): error", 1, true))
local d = einfo.diagnostics[1]
assert(d.line == 3 and d.col == 10 and d.severity == "error", d.message)
assert(einfo.diagnostics[2].severity == "warning" and einfo.diagnostics[2].line == 2)

-- an include outside the toolkit is a compile error at its line
none, msg, code = cuda.compile('\n#include "/etc/hostname"\n')
assert(none == nil and code == "E_COMPILE" and msg:find("candidate.cu:2:1: #include", 1, true), msg)

-- defines: integers, floats, strings, true (bare), false (left out)
local DEF = [[
#if BLOCK != 256 || !defined(USE_X) || defined(OFF)
#error wrong defines
#endif
extern "C" __global__ void f(float* o) { o[0] = SCALE * BLOCK + WORD; }
]]
local md = assert(cuda.compile(DEF, {defines = {BLOCK = 256, USE_X = true, OFF = false,
  SCALE = 0.5, WORD = "3"}}))
md:close()
none, msg = cuda.compile(DEF, {defines = {BLOCK = 128, USE_X = true, SCALE = 1, WORD = 1}})
assert(none == nil and msg:find("candidate.cu:2:", 1, true), msg)

-- misuse raises
local function raises(f, pattern)
  local ok, e = pcall(f)
  assert(not ok, "expected an error matching " .. pattern)
  assert(tostring(e):find(pattern, 1, true), e)
end
raises(function() cuda.compile(VADD, {bogus = 1}) end, "unknown option 'bogus'")
raises(function() cuda.compile(VADD, {defines = {["2X"] = 1}}) end, "not an identifier")
raises(function() cuda.compile(VADD, {defines = {X = "1\n2"}}) end, "newline")
raises(function() cuda.compile(VADD, {defines = {X = {}}}) end, "define X must be")
raises(function() cuda.compile(VADD, {defines = {1}}) end, "define names must be strings")
raises(function() cuda.compile(VADD, {arch = "sm_9"}) end, "arch 'sm_9'")
raises(function() cuda.compile(VADD, {arch = "compute_90"}) end, "arch")
raises(function() cuda.compile(VADD, {lineinfo = 1}) end, "must be a boolean")
raises(function() cuda.compile(VADD, {timeout = -1}) end, "timeout")
raises(function() cuda.compile("") end, "empty source")
raises(function() cuda.compile() end, "bad argument #1")

-- compile_many: strings and tables, duplicates compiled once, failures in place
local list = {
  VADD,
  {source = DEF, defines = {BLOCK = 256, USE_X = true, SCALE = 2, WORD = 0}, name = "def.cu"},
  src_err,
  VADD,
}
local res = cuda.compile_many(list, {arch = "sm_90", cache = false})
assert(#res == 4)
assert(res[1].module and res[1].info.ok and not res[1].error)
assert(res[2].module and res[2].info.kernels[1].name == "f")
assert(not res[3].module and res[3].code == "E_COMPILE" and res[3].info.diagnostics[1].line == 3)
assert(res[3].error:find("candidate.cu:3:10:", 1, true), res[3].error)
assert(res[4].module.hash == res[1].module.hash and res[4].info.cached == true)
assert(res[1].info.cached == false)
for _, r in ipairs(res) do if r.module then r.module:close() end end
raises(function() cuda.compile_many({VADD, 42}) end, "item 2 must be")
raises(function() cuda.compile_many({{source = VADD, arch = "sm_90"}}) end, "unknown option 'arch'")
raises(function() cuda.compile_many({{source = VADD, defines = {["a b"] = 1}}}) end,
  "not an identifier")
assert(#cuda.compile_many({}) == 0)

------------------------------------------------------------------------------------------
-- the adversarial corpus

local src_root = assert(os.getenv("KEVO_SRC"), "KEVO_SRC is not set")
local dir = src_root .. "/tests/adversarial/"
local VERDICTS = {}
for v in ("ok compile_error launch_error wrong unwritten nondeterministic input_modified " ..
          "crash timeout implausible no_gpu error"):gmatch("%S+") do VERDICTS[v] = true end

-- the recipes' contracts, from the recipes themselves: kernel name, argument count (tensors and
-- params), and every shape (benchmark first), then shapes from the corners and the middle of
-- the domain held-out shapes are drawn from (odd sizes)
local RECIPES = {}
for _, name in ipairs {"vector_add", "softmax", "row_sum", "layernorm", "cross_entropy",
                       "matmul_bf16"} do
  local r = assert(require("kevo.recipe").load(src_root .. "/recipes/" .. name .. ".yaml"))
  local shapes = {}
  for i, sh in ipairs(r.shapes) do shapes[i] = sh.params end
  local lo, hi, mid = {}, {}, {}
  for _, p in ipairs(r.param_names) do
    local d = assert(r.domain[p], name .. ": no domain for " .. p)
    assert(d.min >= 1 and d.max >= d.min and d.multiple >= 1, name .. ": domain of " .. p)
    lo[p], hi[p], mid[p] = d.min, d.max, ((d.min + d.max) // 2) | 1
  end
  for _, sh in ipairs {lo, hi, mid} do shapes[#shapes + 1] = sh end
  RECIPES[name] = {kernel = name, nargs = #r.inputs + #r.outputs + #r.param_names,
                   shapes = shapes}
end
assert(RECIPES.vector_add.nargs == 4 and RECIPES.softmax.shapes[1].M == 16384)

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- Runs a launch chunk the way the evaluator does (params, cdiv, min, max, scalar wrappers)
-- and returns its table.
local function resolve_launch(chunk, params, file)
  local env = {cdiv = function(a, b) return (a + b - 1) // b end, min = math.min, max = math.max,
    device = {sms = 132, name = "test"}}
  for _, t in ipairs {"i32", "i64", "u32", "u64", "f32", "f64"} do
    env[t] = function(x) return {[t] = x} end
  end
  env.ptr = function(name) return {buf = name} end
  for k, v in pairs(params) do env[k] = v end
  local fn = assert(load(chunk, "=" .. file .. ":launch", "t", env))
  return fn()
end

local expected, listed = {}, {}
for line in read(dir .. "expected.txt"):gmatch("[^\n]+") do
  if not line:match("^%s*#") and line:match("%S") then
    local file, recipe, verdict = line:match("^(%S+)%s+(%S+)%s+(%S+)%s*$")
    assert(file, "expected.txt: malformed line: " .. line)
    assert(RECIPES[recipe], "expected.txt: unknown recipe " .. recipe)
    for v in verdict:gmatch("[^|]+") do
      -- "ok+drift": ok, with the reference's drift flagged (class 9)
      local base = v:match("^(.-)%+drift$") or v
      assert(VERDICTS[base], "unknown verdict " .. v)
    end
    expected[#expected + 1] = {file = file, recipe = recipe, verdict = verdict}
    listed[file] = verdict
  end
end
assert(#expected >= 15)

-- every .cu file of the directory is listed, and every listed one exists
local pipe = assert(io.popen("ls '" .. dir .. "'"))
local files = {}
for name in pipe:lines() do
  if name:match("%.cu$") then
    files[#files + 1] = name
    assert(listed[name], name .. " is not in expected.txt")
  end
end
pipe:close()
for name in pairs(listed) do assert(read(dir .. name)) end

-- the corpus covers the verdicts it must
local seen = {}
for _, e in ipairs(expected) do
  for v in e.verdict:gmatch("[^|]+") do seen[v] = true end
end
for _, v in ipairs {"ok", "compile_error", "launch_error", "wrong", "unwritten", "input_modified",
                    "crash", "timeout", "implausible", "nondeterministic"} do
  assert(seen[v], "no corpus kernel expects " .. v)
end
-- a good kernel follows every crash and timeout
for i, e in ipairs(expected) do
  if e.verdict == "crash" or e.verdict == "timeout" then
    assert(expected[i + 1] and expected[i + 1].verdict == "ok",
      e.file .. " is not followed by a good kernel")
  end
end

local recipe_of = {}
for _, e in ipairs(expected) do recipe_of[e.file] = e.recipe end
local items = {}
for i, name in ipairs(files) do items[i] = {source = read(dir .. name), name = name} end
local results = cuda.compile_many(items, {arch = "sm_90"})
for i, name in ipairs(files) do
  local r, src = results[i], items[i].source
  local recipe = RECIPES[recipe_of[name]]
  if listed[name] == "compile_error" then
    assert(not r.module and r.code == "E_COMPILE", name .. " compiled")
    local want = 0
    local n = 0
    for line in (src .. "\n"):gmatch("([^\n]*)\n") do
      n = n + 1
      if line:find("kevo:expect-error", 1, true) then want = n end
    end
    local diag = r.info.diagnostics[1]
    assert(want > 0 and diag.line == want,
      name .. ": error at line " .. diag.line .. ", want " .. want)
    assert(diag.col == assert(src:match("[^\n]*kevo:expect%-error"):find("bb%[")),
      name .. ": column")
    assert(r.error:find(name .. ":" .. want .. ":", 1, true), r.error)
  else
    assert(r.module, name .. ": " .. tostring(r.error))
    local names = {}
    for _, k in ipairs(r.info.kernels) do names[k.name] = k end
    assert(names[recipe.kernel], name .. ": no kernel " .. recipe.kernel)
    r.module:close()
  end
  -- the launch chunk resolves on every shape, names the recipe's kernel and passes its arguments
  local chunk = assert(src:match("/%* kevo:launch\n(.-)%*/"), name .. ": no kevo:launch block")
  for _, shape in ipairs(recipe.shapes) do
    local plan = resolve_launch(chunk, shape, name)
    local k = assert(plan.kernels and plan.kernels[1], name .. ": no kernels")
    assert(k.name == recipe.kernel and #k.args == recipe.nargs, name .. ": launch")
    local threads = 1
    for _, b in ipairs(k.block) do threads = threads * b end
    local shared = k.shared or 0
    if listed[name] == "launch_error" then
      assert(threads > 1024 or shared > 227 * 1024, name .. ": this launch is legal")
    else
      assert(threads <= 1024 and shared <= 48 * 1024, name .. ": launch over the limits")
      assert(k.grid[1] >= 1 and k.grid[1] < 2 ^ 31, name .. ": grid")
    end
  end
end
print(string.format("cuda ok (NVRTC %d.%d, %d corpus kernels)", major, minor, #files))
