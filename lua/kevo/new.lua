-- kevo.new: a recipe from a user's own CUDA kernel (`kevo new`). The kernel is both the
-- reference every candidate is checked against and the seed the search starts from.
--
-- From the source it reads the kernel's signature (pointer parameters are tensors: `const T*`
-- inputs, `T*` outputs; integer scalars are the recipe's params; float scalars are constants
-- the launch chunk passes), the knobs (`#ifndef X / #define X v`) and the kevo:launch block
-- (required: kevo never guesses a launch, since a wrong one would verify against itself).
-- It checks the launch chunk on every shape against the signature, compiles the kernel with
-- NVRTC, writes DIR/NAME.yaml, DIR/NAME/reference.cu and DIR/NAME/seed.cu, loads the result
-- with the recipe loader and removes (or restores) what it wrote when that fails.
--
--   require("kevo.new").main(args, sys) -> exit code  (sys.mkdir, sys.read_file: kevo_l_run_main)
local cu = require "kevo.new.cusource"
local lc = require "kevo.new.launchcheck"
local recipe = require "kevo.recipe"
local textsplit = require "kevo.textsplit"

local M = {}

local DSIZE = {f32 = 4, f16 = 2, bf16 = 2, f64 = 8, i32 = 4, i64 = 8, u8 = 1, i8 = 1, bool = 1,
  f8e4m3 = 1, f8e5m2 = 1}
local DEFAULT_TOL = {f32 = "1e-5", f16 = "1e-3", bf16 = "1e-2", f64 = "1e-12",
  f8e4m3 = "0.125", f8e5m2 = "0.25"}
local DTYPE_ORDER = {"f32", "f16", "bf16", "f64", "i32", "i64", "u8", "i8", "bool", "f8e4m3",
  "f8e5m2"}
-- names a param may not take: the launch chunk's globals and Lua's keywords
local RESERVED = {}
for w in ([[min max cdiv i32 i64 u32 u64 f32 f64 ptr null device and break do else elseif end
  false for function goto if in local nil not or repeat return then true until while]])
    :gmatch("%S+") do
  RESERVED[w] = true
end

M.USAGE = [==[usage: kevo new NAME KERNEL.cu --param N=16777216 [--param M=...]... [--kernel FN]
                [--shape TENSOR=[M,N]]... [--extra N=1000[,M=3]]... [--launch FILE.lua]
                [--space KNOB=128,256,512]... [--init TENSOR=INIT]... [--flops EXPR]
                [--tolerance f32:1e-5:1e-5]... [--summary TEXT] [--out DIR] [--force]]==]

-- A bad-input failure: the message and exit code 2.
local function bad(fmt, ...)
  error({exit = 2, msg = fmt:format(...)}, 0)
end

local function split_top(s, sep)
  local items = textsplit.top(s, sep, "([")
  for i, v in ipairs(items) do items[i] = v:match("^%s*(.-)%s*$") end
  return items
end

local function integer(text, what)
  local t = tostring(text):gsub("_", "")
  local v = t:match("^%d+$") and math.tointeger(tonumber(t))
  if not v then bad("%s: expected a positive integer, got '%s'", what, tostring(text)) end
  return v
end

-- Options -> table; raises bad() on misuse.
local function parse_args(argv)
  local o = {params = {}, param_names = {}, shapes = {}, extras = {}, spaces = {}, inits = {},
             tolerance = {}, out = "recipes"}
  local valued = {["--kernel"] = true, ["--param"] = true, ["--shape"] = true, ["--extra"] = true,
                  ["--launch"] = true, ["--space"] = true, ["--init"] = true, ["--flops"] = true,
                  ["--tolerance"] = true, ["--summary"] = true, ["--out"] = true}
  local pos = {}
  local i = 1
  while i <= #argv do
    local a, v = argv[i], nil
    local key, eq = a:match("^(%-%-[%w-]+)=(.*)$")
    if key and valued[key] then a, v = key, eq
    elseif valued[a] then
      v = argv[i + 1]
      if v == nil then bad("%s needs a value\n%s", a, M.USAGE) end
      i = i + 1
    end
    i = i + 1
    if a == "--force" then o.force = true
    elseif a == "--kernel" or a == "--launch" or a == "--flops" or a == "--summary" or
      a == "--out" then
      o[a:sub(3)] = v
    elseif a == "--param" then
      local n, val = v:match("^%s*([%a_][%w_]*)%s*=%s*(.-)%s*$")
      if not n then bad("--param %s: expected NAME=INTEGER (e.g. --param N=16777216)", v) end
      if RESERVED[n] then bad("--param %s: '%s' is a name the launch chunk reserves", v, n) end
      if o.params[n] then bad("--param %s given twice", n) end
      o.params[n] = integer(val, "--param " .. n)
      o.param_names[#o.param_names + 1] = n
    elseif a == "--shape" then
      local n, dims = v:match("^%s*([%a_][%w_]*)%s*=%s*(.-)%s*$")
      if not n then bad("--shape %s: expected TENSOR=[DIM, ...] (e.g. --shape x=[M,N])", v) end
      dims = dims:match("^%[(.*)%]$") or dims
      local list = dims:match("^%s*$") and {} or split_top(dims, ",")
      for _, d in ipairs(list) do
        if d == "" then bad("--shape %s: an empty dimension", v) end
      end
      if o.shapes[n] then bad("--shape %s given twice", n) end
      o.shapes[n] = list
    elseif a == "--extra" then
      local shape = {}
      for _, kv in ipairs(split_top(v, ",")) do
        local n, val = kv:match("^([%a_][%w_]*)%s*=%s*(.+)$")
        if not n then
          bad("--extra %s: expected NAME=INTEGER[,NAME=INTEGER...] (e.g. --extra N=1000)", v)
        end
        shape[#shape + 1] = {name = n, value = integer(val, "--extra " .. n)}
      end
      o.extras[#o.extras + 1] = shape
    elseif a == "--space" then
      local n, vals = v:match("^%s*([%a_][%w_]*)%s*=%s*(.-)%s*$")
      if not n or vals == "" then
        bad("--space %s: expected KNOB=V1,V2,... (e.g. --space BLOCK=128,256,512)", v)
      end
      local list, seen = {}, {}
      for _, x in ipairs(split_top(vals, ",")) do
        local val = math.tointeger(tonumber(x)) or tonumber(x) or (x:match("^[%a_][%w_]*$") and x)
        if not val then bad("--space %s: '%s' is not a number or a word", n, x) end
        if seen[tostring(val)] then bad("--space %s: %s listed twice", n, x) end
        seen[tostring(val)] = true
        list[#list + 1] = val
      end
      o.spaces[n] = list
    elseif a == "--init" then
      local n, init = v:match("^%s*([%a_][%w_]*)%s*=%s*(.-)%s*$")
      if not n or init == "" then
        bad("--init %s: expected TENSOR=INIT (e.g. --init idx=\"randint(0, N)\")", v)
      end
      o.inits[n] = init
    elseif a == "--tolerance" then
      local dt, atol, rtol = v:match("^(%w+):([^:]+):([^:]+)$")
      if not dt or not DEFAULT_TOL[dt] then
        bad("--tolerance %s: expected DTYPE:ATOL:RTOL with DTYPE one of f32, f16, bf16, f64, "
          .. "f8e4m3, f8e5m2 "
          .. "(integers are compared exactly)", v)
      end
      for _, x in ipairs{atol, rtol} do
        local num = tonumber(x)
        if not num or num < 0 or num >= 1 then
          bad("--tolerance %s: '%s' is not a number in [0, 1)", v, x)
        end
      end
      o.tolerance[dt] = {atol = atol, rtol = rtol}
    elseif a:sub(1, 1) == "-" and a ~= "-" then
      bad("unknown option '%s'\n%s", a, M.USAGE)
    else
      pos[#pos + 1] = a
    end
  end
  if #pos ~= 2 then bad("expected NAME and KERNEL.cu\n%s", M.USAGE) end
  o.name, o.file = pos[1], pos[2]
  if not o.name:match("^[%w_.-]+$") then
    bad("recipe name '%s': letters, digits, _, - and . only", o.name)
  end
  return o
end

-- The kernel the recipe is about: --kernel, or the only / first extern "C" one.
local function pick_kernel(o, kernels)
  local usable = {}
  for _, k in ipairs(kernels) do if k.extern_c then usable[#usable + 1] = k.name end end
  local k
  if o.kernel then
    for _, c in ipairs(kernels) do if c.name == o.kernel then k = c end end
    if not k then
      bad("%s: no __global__ kernel named '%s' (kernels: %s)", o.file, o.kernel,
        #usable > 0 and table.concat(usable, ", ") or "none")
    end
  else
    for _, c in ipairs(kernels) do if c.extern_c and not k then k = c end end
    if not k and kernels[1] then k = kernels[1] end
    if not k then
      bad("%s: no extern \"C\" __global__ void kernel found (kevo new reads a signature such as "
        .. "extern \"C\" __global__ void saxpy(const float* x, float* y, int n))", o.file)
    end
  end
  if not k.extern_c then
    bad("%s:%d: kernel '%s' is not extern \"C\": its name would be mangled in the cubin; write "
      .. "extern \"C\" __global__ void %s(...)", o.file, k.line, k.name, k.name)
  end
  if k.error then bad("%s:%d: kernel '%s': %s", o.file, k.line, k.name, k.error) end
  return k
end

local function is_atom(d) return d:match("^[%w_]+$") ~= nil end

local function product(dims)
  if #dims == 0 then return "1" end
  local parts = {}
  for i, d in ipairs(dims) do parts[i] = is_atom(d) and d or "(" .. d .. ")" end
  return table.concat(parts, "*")
end

-- bytes: every tensor read or written once, grouped by element count: "12*N" or "8*M*N + 4*N".
local function bytes_expr(tensors)
  local order, by = {}, {}
  for _, t in ipairs(tensors) do
    local p = product(t.dims)
    if not by[p] then order[#order + 1] = p; by[p] = 0 end
    by[p] = by[p] + DSIZE[t.dtype]
  end
  local terms = {}
  for _, p in ipairs(order) do
    terms[#terms + 1] = p == "1" and tostring(by[p]) or by[p] .. "*" .. p
  end
  return table.concat(terms, " + ")
end

-- The shapes the recipe verifies on: the benchmark (params) then each --extra, complete.
local function all_shapes(o)
  local shapes = {{label = "benchmark", params = o.params}}
  for i, e in ipairs(o.extras) do
    local p = {}
    for k, v in pairs(o.params) do p[k] = v end
    for _, kv in ipairs(e) do
      if o.params[kv.name] == nil then
        bad("--extra %s: unknown param '%s' (params: %s)", kv.name, kv.name,
          table.concat(o.param_names, ", "))
      end
      p[kv.name] = kv.value
    end
    shapes[#shapes + 1] = {label = "extra shape " .. i, params = p, given = e}
  end
  return shapes
end

-- Tensors from the signature (in its order) with their shapes; checks the scalars are params.
local function build_tensors(o, k)
  if #o.param_names == 0 then
    bad("no params: give the benchmark sizes with --param (e.g. --param N=16777216); integer "
      .. "parameters of the kernel are params of the same name")
  end
  local tensors, by_name, ints = {}, {}, {}
  for _, p in ipairs(k.params) do
    if p.scalar == "int" then
      if o.params[p.name] == nil then
        bad("kernel '%s': integer parameter '%s %s' is a size: give it with --param %s=VALUE "
          .. "(params given: %s)", k.name, p.ctype, p.name, p.name,
          table.concat(o.param_names, ", "))
      end
      ints[p.name] = true
    end
  end
  for _, p in ipairs(k.params) do
    if p.pointer then
      local dims = o.shapes[p.name]
      if not dims then
        if #o.param_names ~= 1 then
          bad("tensor '%s' has no shape: give --shape %s=[...] over the params (%s); with more "
            .. "than one param kevo does not guess", p.name, p.name,
            table.concat(o.param_names, ", "))
        end
        dims = {o.param_names[1]}
      end
      for _, d in ipairs(dims) do
        local v, err = recipe.eval(d, o.params)
        if not v then bad("--shape %s: %s", p.name, (tostring(err):gsub("^E_%u+: ", ""))) end
        if math.type(v) ~= "integer" or v < 1 then
          bad("--shape %s: '%s' is %s at the benchmark shape, not a positive integer", p.name, d,
            tostring(v))
        end
      end
      local t = {name = p.name, dtype = p.dtype, ctype = p.ctype, dims = dims,
                 role = p.const and "input" or "output"}
      tensors[#tensors + 1], by_name[p.name] = t, t
    end
  end
  for n in pairs(o.shapes) do
    if not by_name[n] then bad("--shape %s: '%s' is no pointer parameter of %s", n, n, k.name) end
  end
  for n in pairs(o.inits) do
    if not by_name[n] or by_name[n].role ~= "input" then
      bad("--init %s: '%s' is no input (const pointer) of %s", n, n, k.name)
    end
  end
  local nin, nout = 0, 0
  for _, t in ipairs(tensors) do
    if t.role == "input" then nin = nin + 1 else nout = nout + 1 end
  end
  if nout == 0 then
    bad("kernel '%s' has no output: outputs are the non-const pointer parameters (T* y); inputs "
      .. "are declared const (const T* x)", k.name)
  end
  if nin == 0 then
    bad("kernel '%s' has no input: inputs are the const pointer parameters (const T* x); a "
      .. "non-const pointer is an output, filled with poison before every run", k.name)
  end
  for _, t in ipairs(tensors) do
    if t.role == "input" then
      t.init = o.inits[t.name] or (t.dtype:match("^[iu]") and "randint(0, 100)" or "normal")
    end
  end
  return tensors, ints
end

-- The seed's knobs: every `#ifndef X / #define X v` with a plain value, widened by --space.
local function build_knobs(o, src)
  local knobs, skipped, by = {}, {}, {}
  for _, kn in ipairs(cu.knobs(src)) do
    if kn.value == nil then skipped[#skipped + 1] = kn
    else
      if o.params[kn.name] then
        bad("%s:%d: knob %s has the name of a param: rename one of them", o.file, kn.line, kn.name)
      end
      kn.space = {kn.value}
      knobs[#knobs + 1], by[kn.name] = kn, kn
    end
  end
  for n, list in pairs(o.spaces) do
    local kn = by[n]
    if not kn then
      for _, s in ipairs(skipped) do
        if s.name == n then
          bad("--space %s: the default of %s is an expression ('%s'); give it a plain value "
            .. "(#define %s 256) to make it a knob", n, n, s.default, n)
        end
      end
      local names = {}
      for _, x in ipairs(knobs) do names[#names + 1] = x.name end
      bad("--space %s: no knob %s in %s (knobs are #ifndef %s / #define %s value / #endif; "
        .. "found: %s)", n, n, o.file, n, n, #names > 0 and table.concat(names, ", ") or "none")
    end
    kn.space, kn.widened = list, true
  end
  return knobs, skipped
end

local function yq(s) -- a YAML double-quoted scalar
  return '"' .. tostring(s):gsub('[\\"]', "\\%0"):gsub("\n", " ") .. '"'
end

local function dim_text(d) -- an expression, plain when YAML reads it back as written
  if d:match("^[%w_%*%+%-/%%%(%)%. ]+$") and not d:match("^[%*%-%%]") then return d end
  return yq(d)
end

local function flow(list)
  local parts = {}
  for i, v in ipairs(list) do parts[i] = type(v) == "string" and dim_text(v) or tostring(v) end
  return "[" .. table.concat(parts, ", ") .. "]"
end

local function human_bytes(b)
  if b >= 1e9 then return ("%.2f GB"):format(b / 1e9) end
  if b >= 1e6 then return ("%.1f MB"):format(b / 1e6) end
  return ("%d B"):format(math.floor(b))
end

-- The prompt: the contract (signature, tensors, sizes, constants) and what to aim for.
local function build_prompt(o, k, tensors, shapes, consts, bytes, flops)
  local L = {}
  local function line(fmt, ...) L[#L + 1] = fmt:format(...) end
  local sig = {}
  for _, p in ipairs(k.params) do
    sig[#sig + 1] = (p.const and p.pointer and "const " or "") ..
      p.ctype .. (p.pointer and "* " or " ") .. p.name
  end
  line("The kernel is")
  line('  extern "C" __global__ void %s(%s)', k.name, table.concat(sig, ", "))
  line("Keep this exact signature (names, types and order of the parameters) and say how it is")
  line("launched in a /* kevo:launch ... */ block. The original kernel (the seed) defines what it")
  line("computes: every candidate is checked against it, on every size below.")
  line("Tensors are contiguous, row-major, on the device:")
  for _, t in ipairs(tensors) do
    line("  %-10s %-4s %-12s %s", t.name, t.dtype, "[" .. table.concat(t.dims, ", ") .. "]",
         t.role == "input" and "input (read-only)" or
           "output (poisoned before each run: write every element, never read it)")
  end
  local labels = {}
  for i, s in ipairs(shapes) do
    local kv = {}
    for _, n in ipairs(o.param_names) do kv[#kv + 1] = ("%s=%d"):format(n, s.params[n]) end
    labels[#labels + 1] = table.concat(kv, ",") .. (i == 1 and " (timed)" or "")
  end
  line("Sizes (the integer parameters): %s; every one must be right.", table.concat(labels, "; "))
  for _, p in ipairs(k.params) do
    if p.scalar == "float" and consts[p.name] then
      line("%s (%s) is a constant: the launch passes %s(%.9g); keep passing that value.", p.name,
           p.ctype, p.wrap, consts[p.name])
    end
  end
  local intensity = flops and bytes > 0 and flops / bytes or 0
  line("At the timed size it moves %s (every tensor read or written once)%s.", human_bytes(bytes),
       flops and (", %.3g flop per byte"):format(intensity) or "")
  if intensity < 10 then
    line("It is memory-bound: judge a kernel by its effective bandwidth, not its arithmetic.")
    line("- Coalesced accesses: consecutive threads touch consecutive elements.")
    line("- 16-byte vector loads and stores (float4, int4) when the pointers are aligned, with a")
    line("  scalar tail; the sizes are not multiples of the vector width.")
    line("- Several independent loads in flight per thread (unroll, or a grid-stride loop over a")
    line("  grid of a few waves of blocks).")
    line("- Data used once: streaming hints (__ldcs / __stcs) keep it from crowding L2.")
  else
    line("It is compute-bound: keep the data in registers and shared memory, reuse every load,")
    line("and use the widest arithmetic the dtype and the tolerance allow.")
  end
  line("- Handle every size above, including sizes that are not multiples of the block or tile.")
  return table.concat(L, "\n") .. "\n"
end

-- The YAML text of the recipe.
local function build_yaml(o, k, tensors, knobs, skipped, chunk, shapes, prompt, bytes_text)
  local Y = {}
  local function y(fmt, ...) Y[#Y + 1] = fmt:format(...) end
  y("# Made by `kevo new` from %s (kernel %s).", o.file:match("[^/]*$"), k.name)
  y("# The kernel is both the reference every candidate is checked against and the seed the")
  y("# search starts from. Edit freely: add shapes, widen the seed's knob space, refine the")
  y("# prompt; then `kevo check %s`.", o.name)
  y("kevo: 1")
  y("name: %s", o.name)
  y("summary: %s",
    yq(o.summary or ("Your kernel %s (from %s), reference and seed."):format(k.name,
    o.file:match("[^/]*$"))))
  y("params:")
  for _, n in ipairs(o.param_names) do y("  %s: %d", n, o.params[n]) end
  if #shapes > 1 then
    y("shapes:")
    for i = 2, #shapes do
      local kv = {}
      for _, e in ipairs(shapes[i].given) do kv[#kv + 1] = ("%s: %d"):format(e.name, e.value) end
      y("  - {%s}", table.concat(kv, ", "))
    end
  end
  for _, role in ipairs{"input", "output"} do
    y("%ss:", role)
    for _, t in ipairs(tensors) do
      if t.role == role then
        local init = t.init and (", init: " .. yq(t.init)) or ""
        y("  %s: {dtype: %s, shape: %s%s}", t.name, t.dtype, flow(t.dims), init)
        if t.init == "randint(0, 100)" and not o.inits[t.name] then
          y("    # integers in [0, 100): give the range your kernel expects (--init "
            .. "%s=\"randint(0, N)\")", t.name)
        end
      end
    end
  end
  local used = {}
  for _, t in ipairs(tensors) do used[t.dtype] = true end
  local tol = {}
  for _, dt in ipairs(DTYPE_ORDER) do
    if used[dt] and DEFAULT_TOL[dt] then
      local g = o.tolerance[dt] or {atol = DEFAULT_TOL[dt], rtol = DEFAULT_TOL[dt]}
      tol[#tol + 1] = ("  %s: {atol: %s, rtol: %s}%s"):format(dt, g.atol, g.rtol,
        o.tolerance[dt] and "" or "  # the default for " .. dt)
    end
  end
  if #tol > 0 then
    y("tolerance:")
    for _, l in ipairs(tol) do y("%s", l) end
  end
  y("cost:")
  y("  bytes: %s  # every tensor read or written once", bytes_text)
  if o.flops then y("  flops: %s", dim_text(o.flops)) end
  -- The reference runs without knobs: a launch chunk that reads one gets its default as a local.
  local locals = {}
  for _, kn in ipairs(knobs) do
    if chunk.text:find("%f[%w_]" .. kn.name .. "%f[^%w_]") then
      locals[#locals + 1] = ("local %s = %s"):format(kn.name,
        type(kn.value) == "string" and ("%q"):format(kn.value) or tostring(kn.value))
    end
  end
  -- the chunk as a block scalar: dedented, with an explicit indentation indicator so a first
  -- line indented deeper than the rest still reads back as written
  local body, common = {}, nil
  for l in (chunk.text:gsub("^%s*\n", ""):gsub("%s*$", "") .. "\n"):gmatch("([^\n]*)\n") do
    body[#body + 1] = l
    if l:match("%S") then
      local lead = #l:match("^[ \t]*")
      common = math.min(common or lead, lead)
    end
  end
  local function launch_key(ind, prefix)
    y("%slaunch: |2", ind)
    for _, l in ipairs(prefix) do y("%s  %s", ind, l) end
    for _, l in ipairs(body) do
      y("%s", l:match("%S") and ind .. "  " .. l:sub((common or 0) + 1) or "")
    end
  end
  for _, role in ipairs{"reference", "seed"} do
    local ind = role == "reference" and "  " or "    "
    if role == "reference" then
      y("reference:")
      y("  lang: cuda")
    else
      y("seeds:")
      y("  - lang: cuda")
    end
    y("%sfile: %s/%s.cu", ind, o.name, role)
    y("%skernel: %s", ind, k.name)
    if role == "reference" and #locals > 0 then
      y("  # the kernel's launch, with the knobs it reads fixed at their #define defaults")
      launch_key(ind, locals)
    elseif chunk.from_file then
      launch_key(ind, {})
    end
    if role == "seed" and #knobs > 0 then
      local sp = {}
      for _, kn in ipairs(knobs) do sp[#sp + 1] = ("%s: %s"):format(kn.name, flow(kn.space)) end
      y("    space: {%s}", table.concat(sp, ", "))
      local widen = {}
      for _, kn in ipairs(knobs) do
        if not kn.widened and math.type(kn.value) == "integer" and kn.value >= 2 and
          kn.value % 2 == 0 then
          widen[#widen + 1] = ("%s: [%d, %d, %d]"):format(kn.name, kn.value // 2, kn.value,
            kn.value * 2)
        end
      end
      if #widen > 0 then
        y("    # only the defaults: widen the space for the autotuner, e.g. {%s}",
          table.concat(widen, ", "))
      end
    end
    for _, s in ipairs(role == "seed" and skipped or {}) do
      y("    # %s (line %d) is not a knob here: its default '%s' is not a plain value", s.name,
        s.line, s.default)
    end
  end
  y("prompt: |")
  for l in prompt:gmatch("([^\n]*)\n") do y("%s", l == "" and "" or "  " .. l) end
  return table.concat(Y, "\n") .. "\n"
end

-- Compiles the kernel alone (its knobs at their defaults), as every run will: a kernel that
-- does not compile, or whose entry is not in the cubin, makes no recipe. NVRTC missing here
-- is a warning: the recipe is still right.
local function compile_check(o, src, k, warn)
  local ok, cuda = pcall(require, "kevo.cuda")
  if not ok then warn("kevo.cuda is not in this build: the kernel was not compiled") return end
  local m, msg, code, info = cuda.compile(src, {name = o.file:match("[^/]*$")})
  if not m then
    if code == "E_COMPILE" then
      local lines = {}
      for _, d in ipairs(info and info.diagnostics or {}) do
        if d.severity == "error" and #lines < 5 then
          lines[#lines + 1] = ("  %s:%d:%d: %s"):format(o.file, d.line, d.col, d.message)
        end
      end
      bad("%s does not compile with NVRTC:\n%s", o.file,
        #lines > 0 and table.concat(lines, "\n") or msg)
    end
    warn(("the kernel was not compiled here (%s)"):format(msg))
    return
  end
  local names = {}
  for _, kk in ipairs((m:info() or {}).kernels or {}) do names[kk.name] = true end
  m:close()
  if next(names) and not names[k.name] then
    bad("%s compiles, but its cubin has no kernel named %s", o.file, k.name)
  end
end

-- Writes the files, loads the recipe back and, when it does not load, removes what was
-- written (restoring files --force replaced) and the directories made.
local function write_all(o, sys, files, yaml_path)
  local made = {}
  local function undo(old)
    for i = #files, 1, -1 do
      local f = files[i]
      if old[f.path] then
        local h = io.open(f.path, "wb")
        if h then h:write(old[f.path]); h:close() end
      else
        os.remove(f.path)
      end
    end
    for i = #made, 1, -1 do os.remove(made[i]) end
  end
  local prefix = o.out:sub(1, 1) == "/" and "/" or ""
  local dirs = {}
  for part in o.out:gmatch("[^/]+") do
    prefix = prefix .. part
    dirs[#dirs + 1] = prefix
    prefix = prefix .. "/"
  end
  dirs[#dirs + 1] = prefix .. o.name
  for _, d in ipairs(dirs) do
    local ok, how = sys.mkdir(d)
    if not ok then
      for i = #made, 1, -1 do os.remove(made[i]) end
      error({exit = 1, msg = how}, 0)
    end
    if how == "made" then made[#made + 1] = d end
  end
  local old = {}
  for _, f in ipairs(files) do old[f.path] = sys.read_file(f.path) end
  for _, f in ipairs(files) do
    local h, err = io.open(f.path, "wb")
    local okw = h and h:write(f.text) and h:close()
    if not okw then
      undo(old)
      error({exit = 1, msg = ("cannot write %s: %s"):format(f.path, tostring(err))}, 0)
    end
  end
  local r, msg = recipe.load(yaml_path)
  if not r then
    undo(old)
    bad("the recipe made from these inputs does not load, so nothing was left behind:\n  %s", msg)
  end
  return r
end

-- read_file's failure ("E_IO: PATH: is not a regular file (a FIFO)") as the reason alone.
local function unread_reason(path, msg)
  msg = tostring(msg or "unreadable"):gsub("^E_%u+: ", "")
  if msg:sub(1, #path + 2) == path .. ": " then msg = msg:sub(#path + 3) end
  return msg
end

local function run(argv, sys)
  local o = parse_args(argv)
  local warnings = {}
  local function warn(msg) warnings[#warnings + 1] = msg end
  local src, why = sys.read_file(o.file)
  if not src then bad("%s: cannot read it (%s)", o.file, unread_reason(o.file, why)) end
  local kernels = cu.kernels(src)
  local k = pick_kernel(o, kernels)
  local tensors, ints = build_tensors(o, k)
  for _, n in ipairs(o.param_names) do
    local used = ints[n]
    for _, t in ipairs(tensors) do
      for _, d in ipairs(t.dims) do
        if d:find("%f[%w_]" .. n .. "%f[^%w_]") then used = true end
      end
    end
    if not used then
      warn(("param %s is neither a parameter of %s nor in a tensor shape"):format(n, k.name))
    end
  end
  local knobs, skipped = build_knobs(o, src)
  local shapes = all_shapes(o)
  for _, s in ipairs(shapes) do s.names = o.param_names end

  -- the launch: the file's block or --launch; never a guess
  local chunk = {}
  if o.launch then
    chunk.text, why = sys.read_file(o.launch)
    if not chunk.text then
      bad("--launch %s: cannot read it (%s)", o.launch, unread_reason(o.launch, why))
    end
    chunk.where, chunk.from_file = o.launch, true
  else
    local text, line_or_err = cu.launch(src)
    if not text and line_or_err then bad("%s: %s", o.file, line_or_err) end
    if not text then
      bad("%s has no kevo:launch block, and kevo new does not guess one: the kernel is its own "
        .. "reference, so a wrong launch would verify against itself. Add a block that launches "
        .. "it the way your code does (or pass --launch FILE.lua), for example:\n\n%s\n\n"
        .. "Check grid and block against the kernel's indexing: params (%s) and knobs are "
        .. "globals; cdiv, min, max and the wrappers i32 i64 u32 u64 f32 f64 are there too.",
        o.file, lc.suggest(k, tensors, knobs, product), table.concat(o.param_names, ", "))
    end
    chunk.text, chunk.where = text, ("%s:%d: kevo:launch"):format(o.file, line_or_err)
  end
  local consts
  for i, s in ipairs(shapes) do
    local c = lc.check(chunk.text, chunk.where, s, knobs, k, kernels, tensors, bad)
    if i == 1 then consts = c end
    if c == nil and i == 1 then
      warn(
        "the launch chunk reads `device`: it was not checked here (kevo check/eval on a GPU will)")
    end
  end
  consts = consts or {}
  -- every value of every knob's space must make a launch too (--space BLOCK=0 is bad input)
  for _, kn in ipairs(knobs) do
    local default = kn.value
    for _, v in ipairs(kn.space or {}) do
      if v ~= default then
        kn.value = v
        for _, s in ipairs(shapes) do
          lc.check(chunk.text, ("%s with --space %s=%s"):format(chunk.where, kn.name, tostring(v)),
            s,
                   knobs, k, kernels, tensors, bad)
        end
      end
    end
    kn.value = default
  end
  for _, p in ipairs(k.params) do
    if p.scalar == "float" and consts[p.name] then
      for i = 2, #shapes do
        local c = lc.check(chunk.text, chunk.where, shapes[i], knobs, k, kernels, tensors, bad)
        if c and c[p.name] ~= consts[p.name] then
          warn(("float %s changes with the shape (%g at the benchmark)"):format(p.name,
            consts[p.name]))
        end
      end
    end
  end
  compile_check(o, src, k, warn)
  if src:match('#%s*include%s*"') then
    warn("the kernel #includes a local header: kevo compiles reference.cu and seed.cu alone, so "
      .. "inline what it needs")
  end

  -- cost, prompt, YAML
  local bytes_text = bytes_expr(tensors)
  local bytes, berr = recipe.eval(bytes_text, o.params)
  if not bytes then
    bad("cost.bytes '%s': %s (check the --shape expressions)", bytes_text, tostring(berr))
  end
  local flops
  if o.flops then
    local f, ferr = recipe.eval(o.flops, o.params)
    if not f then bad("--flops %s: %s", o.flops, tostring(ferr)) end
    flops = f
  end
  if #o.extras == 0 then
    warn("no extra shape: add at least one with --extra (a size of 1, a prime, one past a power "
      .. "of two) so a candidate that only works at the benchmark size is caught")
  end
  local prompt = build_prompt(o, k, tensors, shapes, consts, bytes, flops)
  local yaml = build_yaml(o, k, tensors, knobs, skipped, chunk, shapes, prompt, bytes_text)

  local yaml_path = o.out .. "/" .. o.name .. ".yaml"
  local dir = o.out .. "/" .. o.name
  local files =
    {{path = dir .. "/reference.cu", text = src}, {path = dir .. "/seed.cu", text = src},
                 {path = yaml_path, text = yaml}}
  if not o.force then
    local there = {}
    for _, f in ipairs(files) do if sys.read_file(f.path) then there[#there + 1] = f.path end end
    if #there > 0 then bad("%s already exist%s (--force to overwrite)", table.concat(there, ", "),
      #there == 1 and "s" or "") end
  end
  local r = write_all(o, sys, files, yaml_path)

  for _, w in ipairs(warnings) do io.stderr:write("kevo new: warning: ", w, "\n") end
  local P = {}
  local function p(fmt, ...) P[#P + 1] = fmt:format(...) end
  p("wrote %s (reference and seed: %s/reference.cu, %s/seed.cu)", yaml_path, dir, dir)
  local ins, outs = {}, {}
  for _, t in ipairs(tensors) do
    local s = ("%s %s [%s]"):format(t.name, t.dtype, table.concat(t.dims, ", "))
    if t.role == "input" then ins[#ins + 1] = s else outs[#outs + 1] = s end
  end
  p("  kernel   %s (%d parameters)", k.name, #k.params)
  p("  inputs   %s", table.concat(ins, ", "))
  p("  outputs  %s  (poisoned before each run: the kernel writes them, never reads them)",
    table.concat(outs, ", "))
  local sl = {}
  for i, s in ipairs(r.shapes) do sl[#sl + 1] = s.label .. (i == 1 and " (benchmark)" or "") end
  p("  shapes   %s", table.concat(sl, " "))
  p("  cost     bytes %s = %s%s", bytes_text, human_bytes(bytes),
    o.flops and (", flops " .. o.flops) or "")
  if #knobs > 0 then
    local kl = {}
    for _, kn in ipairs(knobs) do
      local vs = {}
      for i, v in ipairs(kn.space) do vs[i] = tostring(v) end
      kl[#kl + 1] = ("%s {%s}"):format(kn.name, table.concat(vs, ", "))
    end
    p("  knobs    %s%s", table.concat(kl, " x "),
      #knobs > 0 and " (widen with --space or in the YAML)" or "")
  end
  local steps = {{"kevo check " .. yaml_path, ""},
                 {("kevo eval %s %s/seed.cu"):format(yaml_path, dir),
                   "on a GPU: checked against the reference, timed"},
                 {"kevo run " .. yaml_path, "search for a faster kernel"}}
  p("next:")
  for _, st in ipairs(steps) do
    p("  %s", st[2] == "" and st[1] or ("%-" .. #steps[2][1] .. "s  # %s"):format(st[1], st[2]))
  end
  io.stdout:write(table.concat(P, "\n"), "\n")
  return 0
end

-- `kevo new`: returns the exit code (0 written, 1 a file could not be written, 2 bad input,
-- with what to fix on stderr).
function M.main(argv, sys)
  local ok, res = pcall(run, argv, sys)
  if ok then return res end
  if type(res) == "table" and res.exit then
    io.stderr:write("kevo new: ", res.msg, "\n")
    return res.exit
  end
  error(res, 0)
end

return M
