-- kevo.kbench: KernelBench-format problems as recipes (docs/kbench.md).
--
-- A problem file (nn.Module Model, get_inputs(), get_init_inputs()) is described once by the
-- PyTorch bridge (kevo.torchref.describe, or a recorded description JSON), and the description
-- becomes a recipe: the forward's tensor arguments then the model's parameters and buffers are
-- the inputs (in that order), the forward's outputs the outputs, sizes named after the
-- problem's module-level integers, the cost, a tolerance measured against float64, the
-- problem file itself as the reference (lang torch), and the contract a candidate implements.
local json = require "kevo.json"

local M = {}

local CTYPE = {f32 = "float", f16 = "__half", bf16 = "__nv_bfloat16", f64 = "double",
               i32 = "int", i64 = "long long", u8 = "unsigned char", i8 = "signed char",
               bool = "bool", f8e4m3 = "__nv_fp8_e4m3", f8e5m2 = "__nv_fp8_e5m2"}
local DSIZE = {f32 = 4, f16 = 2, bf16 = 2, f64 = 8, i32 = 4, i64 = 8, u8 = 1, i8 = 1, bool = 1,
               f8e4m3 = 1, f8e5m2 = 1}

-- Names a size may not take: the launch chunk's own globals, Lua keywords, expression calls.
local RESERVED = {}
for w in ([[min max cdiv i32 i64 u32 u64 f32 f64 ptr null device math string table
  and break do else elseif end false for function goto if in local nil not or repeat return
  then true until while]]):gmatch("%S+") do RESERVED[w] = true end

local function fail(fmt, ...)
  return nil, "E_RECIPE: " .. fmt:format(...), "E_RECIPE"
end

local function isnull(v) return v == nil or v == json.null end

local function ident(s)
  s = tostring(s):gsub("[^%w_]", "_")
  if s:match("^%d") then s = "t_" .. s end
  if s == "" then s = "t" end
  return s
end

-- Checks the description's shape (it may be hand-written); returns nil, msg on the first fault.
local function check(d)
  if type(d) ~= "table" or d.kevo_description ~= 1 then
    return fail("not a kevo problem description (kevo_description: 1 missing)")
  end
  for _, key in ipairs{"inputs", "weights", "outputs"} do
    if isnull(d[key]) then d[key] = {} end
    if type(d[key]) ~= "table" then return fail("description: %s must be a list", key) end
    for i, t in ipairs(d[key]) do
      local where = ("description: %s[%d]"):format(key, i)
      if type(t.name) ~= "string" then return fail("%s has no name", where) end
      if not CTYPE[t.dtype] then
        return fail("%s (%s): unknown dtype '%s'", where, t.name, tostring(t.dtype))
      end
      if type(t.shape) ~= "table" then return fail("%s (%s): no shape", where, t.name) end
      for _, n in ipairs(t.shape) do
        if math.type(n) ~= "integer" or n < 1 then
          return fail("%s (%s): dims must be positive integers, got %s", where, t.name, tostring(n))
        end
      end
    end
  end
  if #d.outputs == 0 then return fail("description: the forward returns no tensor") end
  if #d.inputs + #d.weights == 0 then
    return fail(
      "description: the model takes no tensor and has no weights: nothing to compute from")
  end
  return true
end

-- Sizes: every dim value above 1 that equals exactly one module-level integer of the problem
-- takes its name. A value several integers share (in_channels = kernel_size = 3) stays a number
-- in the shapes, which cannot say which one a dim is, but each of those integers is still a
-- size the kernel receives, in file order: a kernel never has to hard-code one.
local function size_names(d)
  local byvalue, params, used = {}, {}, {}
  for _, g in ipairs(isnull(d.globals) and {} or d.globals) do
    local n, v = g.name, g.value
    if type(n) == "string" and n:match("^[%a_][%w_]*$") and not RESERVED[n]
        and math.type(v) == "integer" and v > 1 then
      byvalue[v] = byvalue[v] or {}
      table.insert(byvalue[v], n)
    end
  end
  local function dim(v)
    local names = byvalue[v]
    if not names then return tostring(v) end
    for _, n in ipairs(names) do
      if not used[n] then
        used[n] = true
        params[#params + 1] = {name = n, value = v, shared = #names > 1 and names or nil}
      end
    end
    return #names == 1 and names[1] or tostring(v)
  end
  return dim, params, used
end

-- The kernel's name: the problem's name without KernelBench's number ("19_ReLU" -> relu_kernel).
local function kernel_name(name)
  local s = tostring(name):gsub("^[%d_]+", ""):lower():gsub("[^%w]+", "_"):gsub("^_+", "")
  s = s:gsub("_+$", "")
  if s == "" or s:match("^%d") then s = "problem" .. (s ~= "" and "_" .. s or "") end
  return s .. "_kernel"
end

-- 1, 2 or 5 x 10^k at or above x (x > 0).
local function round_up(x)
  local k = math.floor(math.log(x, 10))
  for _ = 1, 2 do
    for _, m in ipairs{1, 2, 5} do
      local v = tonumber(("%.3g"):format(m * 10.0 ^ k))
      if v >= x * (1 - 1e-9) then return v end
    end
    k = k + 1
  end
  return 10.0 ^ k
end

local F32_DEFAULT = 1e-5 -- the recipe default for f32 (docs/recipes.md)

-- The f32 tolerance an imported recipe states, and why: {f32 = {atol, rtol}, why = text}, or
-- {why = text} when no output is f32, or nil, "E_RECIPE: ..." when no tolerance can tell a right
-- kernel from an all-zero or constant one. A check passes an element when
-- |a - e| <= atol + rtol * |e|. The start is the bridge's measurement (t = 8x torch's own f32
-- error s against float64, scaled by 1 + |e|, rounded up; atol = rtol = t) or, when it could not
-- measure, kevo's default, said with the bridge's reason. A reference that is nondeterministic
-- at the level of rounding widens t to 8x its own run-to-run spread. Then, per f32 output with
-- statistics: its variation v is the larger of its spread within one draw (max - min) and how
-- far it moves between draws (`moved`: the largest element-wise difference between two draws
-- of inputs and weights; a scalar output spans 0 within a draw and only moves), the movement
-- counted for a quarter (MOVED_MARGIN: seen on three draws, it stands for five others). A
-- kernel that writes the same values whatever its inputs (a constant, or any fixed tensor)
-- passes only if every element stays within atol + rtol |e| of it in every trial, so it fails
-- once v > 2 (atol + rtol max|e|). Where all zeros (|e| <= atol + rtol |e| everywhere) or such a
-- kernel would pass, atol shrinks to 8s (and rtol too if needed) so that atol + rtol max|e|
-- stays under a tenth of what separates a right output from the wrong one (max|e| from zero,
-- half the spread from a constant), or for the movement under an eighth of it (its margin is
-- already counted); when even 8s does not fit there, the problem is refused.
local MOVED_MARGIN = 4

-- What an output's statistics say against all-zero and constant kernels: the size a zero
-- kernel must miss (the smaller of the import's draws and the draws like kevo's trials,
-- `stats.trials`: the worker judges on the latter), the size the tolerance band is taken at
-- (the larger), and the variation v a constant must straddle (the smaller of the two
-- sources' max(spread, moved / MOVED_MARGIN)), with the figures behind v and where they are
-- from.
local function variation(st)
  local function one(x)
    local spread = x.max - x.min
    local moved = tonumber(not isnull(x.moved) and x.moved or nil)
    -- the band a constant must fall in: under half of either; the room left for a rescaled
    -- one: a tenth of that for the spread within a draw, the margin alone for the movement
    local m = (moved or 0) / MOVED_MARGIN
    return math.max(spread, m), spread, moved, math.max(spread / 20, m / 2)
  end
  local v, spread, moved, room = one(st)
  local small, big, where = st.absmax, st.absmax, ""
  local tr = not isnull(st.trials) and type(st.trials) == "table" and st.trials or nil
  if tr and tonumber(tr.absmax) and tonumber(tr.min) and tonumber(tr.max) then
    local v2, spread2, moved2, room2 = one(tr)
    if v2 < v then
      v, spread, moved, room, where = v2, spread2, moved2, room2, " in draws like kevo's trials"
    end
    small, big = math.min(small, tr.absmax), math.max(big, tr.absmax)
  end
  return small, big, v, spread, moved, where, room
end

function M.tolerance(d)
  local f32 = false
  for _, o in ipairs(d.outputs or {}) do f32 = f32 or o.dtype == "f32" end
  if not f32 then return {why = "no f32 output: each dtype's default tolerance"} end
  local measured = not isnull(d.tolerance) and tonumber(d.tolerance.f32) or nil
  local s = measured and tonumber(d.tolerance.measured) or nil
  local t, why
  if measured then
    t = measured
    why = ("8x the error of torch's f32 result against float64 (%.3g), rounded up"):format(s or 0)
    if not isnull(d.tolerance.subsample) and d.tolerance.subsample then
      why = why .. (" (measured on %s)"):format(tostring(d.tolerance.subsample))
    end
  else
    t = F32_DEFAULT
    local reason = not isnull(d.tolerance) and not isnull(d.tolerance.why) and
      tostring(d.tolerance.why) or "the description holds no measured tolerance"
    why = ("kevo's default for f32, not measured: %s"):format(reason)
  end
  s = s or t / 8
  local nd = tonumber(not isnull(d.nondeterminism) and d.nondeterminism or nil)
  if nd and nd > 0 and 8 * nd > t then
    t = round_up(8 * nd)
    s = math.max(s, nd)
    why = why .. ("; widened to 8x the reference's own run-to-run spread (%.3g)"):format(nd)
  end
  local atol, rtol, checked = t, t, false
  for _, o in ipairs(d.outputs or {}) do
    local st = not isnull(o.stats) and o.stats or nil
    if o.dtype == "f32" and st and tonumber(st.absmax) and tonumber(st.min) and
      tonumber(st.max) then
      checked = true
      local absmax, big, v, spread, moved, where, croom = variation(st)
      local zeros_pass = absmax <= atol + rtol * absmax
      local constant_pass = v <= 2 * (atol + rtol * big)
      local shape = ("at most %.3g in size, spanning %.3g within a draw, moving %s between "
        .. "draws%s"):format(absmax, spread, moved and ("%.3g"):format(moved) or "(not measured)",
        where)
      if zeros_pass or constant_pass then
        local room = math.min(zeros_pass and absmax / 10 or math.huge,
                              constant_pass and croom or math.huge)
        local floor8 = s > 0 and round_up(8 * s) or 0
        local a, r = floor8, rtol
        if a + r * big > room then r = floor8 end
        if a + r * big > room then
          if zeros_pass and absmax <= 2 * s * (1 + absmax) then
            return nil, ("E_RECIPE: refused: output %s is rounding noise: at most %.3g in size, "
              .. "within twice torch's own f32 error against float64 (%.3g), so an all-zero "
              .. "kernel is as right as torch's answer and no tolerance tells a right kernel "
              .. "from it")
              :format(o.name, absmax, s)
          end
          return nil, ("E_RECIPE: refused: output %s is %s; torch's own f32 error (%.3g) leaves "
            .. "no tolerance under which a right kernel passes and %s one fails"):format(o.name,
            shape, s, zeros_pass and "an all-zero" or "a constant (input-independent)")
        end
        why = why .. ("; rescaled to atol %.3g, rtol %.3g for output %s (%s): atol %.3g would "
          .. "pass %s kernel"):format(a, r, o.name, shape, atol,
          zeros_pass and "an all-zero" or "a constant")
        atol, rtol = a, r
      end
    end
  end
  if not checked then
    why = why .. "; not checked against all-zero or constant outputs (the description has no "
      .. "output statistics)"
  end
  return {f32 = {atol = atol, rtol = rtol}, why = why}
end

-- Why the reference is nearly constant, or nil: an output that sits at one value (its minimum
-- or maximum: a ReLU or a clamp past nearly all of its inputs) at all but a few elements in
-- some draw of the import's. kevo's trials draw other inputs, and may hit none of the few, so
-- a constant kernel would pass them (level2/9: the bias-shifted ReLU of a matmul is zero but
-- for a handful of elements, and five trials on the H200 gave all zeros). Few: under 64
-- elements and under 1% of the output.
local NEARLY_CONSTANT = 64
local function nearly_constant(d)
  for _, o in ipairs(d.outputs or {}) do
    local st = not isnull(o.stats) and o.stats or nil
    local n = st and math.tointeger(st.numel)
    local others = st and math.tointeger(not isnull(st.others) and st.others or nil)
    local tr = st and not isnull(st.trials) and type(st.trials) == "table" and st.trials or nil
    local tro = tr and math.tointeger(not isnull(tr.others) and tr.others or nil)
    if others and tro then others = math.min(others, tro) end
    if n and others and n > 1 and others < NEARLY_CONSTANT and others * 100 <= n then
      local at_max = (tonumber(st.at_max) or 0) >= (tonumber(st.at_min) or 0)
      return ("output %s sits at one value (its %s, %.6g in the first draw) at all but %d of "
        .. "its %d elements in one of the import's draws; kevo's own trials may draw none of "
        .. "those %d, and then a constant kernel passes"):format(o.name,
        at_max and "maximum" or "minimum",
        at_max and st.max or st.min, others, n, others)
    end
  end
  return nil
end

local function product(dims)
  if #dims == 0 then return "1" end
  return table.concat(dims, "*")
end

-- The recipe for description d: {name =, yaml =, readme =, signature =, tensors =, params =}
-- or nil, "E_RECIPE: why", "E_RECIPE". opts: name (recipe name), problem (file name for the
-- reference, default d.problem).
function M.recipe(d, opts)
  opts = opts or {}
  local ok, msg, code = check(d)
  if not ok then return nil, msg, code end
  if not isnull(d.degenerate) then
    return fail("refused: the reference is degenerate: %s; it cannot tell a right kernel from "
                .. "a wrong one",
                tostring(d.degenerate))
  end
  if not isnull(d.random) then return fail("refused: %s", tostring(d.random)) end
  local nearly = nearly_constant(d)
  if nearly then
    return fail("refused: the reference is nearly constant: %s; it cannot tell a right kernel "
                .. "from a wrong one",
                nearly)
  end
  local name = opts.name or tostring(d.problem or "problem"):gsub("%.py$", "")
  name = name:gsub("[^%w_.-]", "_")
  local dim, params, used = size_names(d)
  local taken, tensors = {}, {}
  local function add(t, role, origin)
    local n = ident(t.name)
    local base, k = n, 2
    while taken[n] do n, k = base .. "_" .. k, k + 1 end
    taken[n] = true
    local dims = {}
    for i, v in ipairs(t.shape) do dims[i] = dim(v) end
    tensors[#tensors + 1] = {name = n, dtype = t.dtype, dims = dims, shape = t.shape, role = role,
                             init = t.init, origin = origin, numel = 1}
    for _, v in ipairs(t.shape) do tensors[#tensors].numel = tensors[#tensors].numel * v end
  end
  for _, t in ipairs(d.inputs) do add(t, "input", "forward argument") end
  for _, t in ipairs(d.weights) do
    add(t, "input", ("%s %s of the model"):format(t.kind or "parameter", t.name))
  end
  for _, t in ipairs(d.outputs) do add(t, "output", "forward output") end
  -- scalar arguments of the forward: integers are sizes (params), floats constants
  local scalars = {}
  for _, s in ipairs(isnull(d.scalars) and {} or d.scalars) do
    if s.type == "int" then
      local n = ident(s.name)
      if RESERVED[n] then n = n .. "_arg" end
      local clash = false
      for _, p in ipairs(params) do
        if p.name == n then clash = p.value ~= s.value end
      end
      if clash then n = n .. "_arg" end
      if not used[n] then
        used[n] = true
        params[#params + 1] = {name = n, value = s.value}
      end
    elseif s.type == "float" then
      scalars[#scalars + 1] = {name = ident(s.name), value = s.value}
    else
      return fail("description: scalar %s has unknown type '%s'", tostring(s.name),
        tostring(s.type))
    end
  end
  -- the contract
  local kname = kernel_name(name)
  local sig, args = {}, {}
  for _, t in ipairs(tensors) do
    local c = CTYPE[t.dtype]
    sig[#sig + 1] = (t.role == "input" and "const " or "") .. c .. " *__restrict__ " .. t.name
    args[#args + 1] = ('"%s"'):format(t.name)
  end
  for _, p in ipairs(params) do
    sig[#sig + 1] = "int " .. p.name
    args[#args + 1] = ("i32(%s)"):format(p.name)
  end
  for _, s in ipairs(scalars) do
    sig[#sig + 1] = "float " .. s.name
    args[#args + 1] = ("f32(%.9g)"):format(s.value)
  end
  local signature = ('extern "C" __global__ void %s(%s)'):format(kname, table.concat(sig, ", "))
  local out1 = nil
  for _, t in ipairs(tensors) do if t.role == "output" and not out1 then out1 = t end end
  local launch = ('return {kernels = {{name = "%s", grid = {cdiv(%s, 256)}, block = {256},\n'
    .. '                    args = {%s}}}}'):format(kname, product(out1.dims),
    table.concat(args, ", "))

  local L = {}
  local function line(fmt, ...) L[#L + 1] = fmt:format(...) end
  line("Imported from the KernelBench problem %s: the reference is PyTorch's forward of its Model",
       tostring(d.problem))
  line("(%s/problem.py), computed on kevo's own seeded inputs and weights.", name)
  line("")
  line("Write CUDA (extern \"C\" __global__ kernels) or Triton that computes the outputs from the")
  line(
    "inputs. Tensors are contiguous, row-major, on the device. Weights are inputs like the rest:")
  line("the candidate receives them, it does not make them.")
  line("")
  local function row(t)
    line("  %-20s %-4s [%s]  %s", t.name, t.dtype, table.concat(t.dims, ", "), t.origin)
  end
  line("Inputs (read-only), in this order:")
  for _, t in ipairs(tensors) do if t.role == "input" then row(t) end end
  line("Outputs:")
  for _, t in ipairs(tensors) do if t.role == "output" then row(t) end end
  if #params > 0 then
    local ps, notes, noted = {}, {}, {}
    for _, p in ipairs(params) do
      ps[#ps + 1] = ("%s = %d"):format(p.name, p.value)
      if p.shared and not noted[p.value] then
        noted[p.value] = true
        notes[#notes + 1] = ("(%s share the value %d: dims of that size are written %d.)")
          :format(table.concat(p.shared, " and "), p.value, p.value)
      end
    end
    line("Sizes (int): %s", table.concat(ps, ", "))
    for _, n in ipairs(notes) do line("%s", n) end
  end
  for _, s in ipairs(scalars) do line("Constant (float): %s = %.9g", s.name, s.value) end
  line("")
  line("A single-kernel candidate has exactly this signature (inputs, outputs, sizes, constants):")
  line("  %s", signature)
  line("and says how it is launched in a kevo:launch block (several kernels run in order):")
  line("  /* kevo:launch")
  for l in launch:gmatch("[^\n]+") do line("  %s", l) end
  line("  */")
  local contract = table.concat(L, "\n") .. "\n"

  local Y = {}
  local function y(fmt, ...) Y[#Y + 1] = fmt:format(...) end
  local function q(s) return '"' .. tostring(s):gsub('[\\"]', "\\%0"):gsub("\n", " ") .. '"' end
  y("# Imported by `kevo import` from %s (torch %s, %s). Edit freely.", tostring(d.problem),
    tostring(d.torch or "?"), tostring(d.device_name or d.device or "?"))
  y("kevo: 1")
  y("name: %s", name)
  y("summary: %s", q("KernelBench problem " .. tostring(d.problem) .. " (PyTorch reference)"))
  if #params > 0 then
    y("params:")
    for _, p in ipairs(params) do y("  %s: %d", p.name, p.value) end
  end
  y("inputs:")
  for _, t in ipairs(tensors) do
    if t.role == "input" then
      local init = type(t.init) == "string" and t.init or "normal"
      if t.dtype == "bool" and not init:match("^randint") then
        init = "randint(0, 2)"
      elseif t.dtype:match("^[iu]") and not init:match("^randint") then
        init = "randint(0, 100)"
      end
      y("  %s: {dtype: %s, shape: [%s], init: %s}", t.name, t.dtype, table.concat(t.dims, ", "),
        q(init))
    end
  end
  y("outputs:")
  for _, t in ipairs(tensors) do
    if t.role == "output" then
      y("  %s: {dtype: %s, shape: [%s]}", t.name, t.dtype, table.concat(t.dims, ", "))
    end
  end
  local tol, terr = M.tolerance(d)
  if not tol then return nil, terr, "E_RECIPE" end
  if tol.f32 then
    y("tolerance:  # %s", tol.why)
    y("  f32: {atol: %.3g, rtol: %.3g}", tol.f32.atol, tol.f32.rtol)
  end
  local cost = isnull(d.cost) and {} or d.cost
  local bytes = 0
  for _, t in ipairs(tensors) do bytes = bytes + t.numel * DSIZE[t.dtype] end
  y("cost:")
  y("  bytes: %d", math.tointeger(cost.bytes) or bytes)
  if math.tointeger(cost.flops) and cost.flops > 0 then y("  flops: %d", cost.flops) end
  y("reference:")
  y("  lang: torch")
  y("  file: %s/problem.py", name)
  y("prompt: |")
  for l in contract:gmatch("([^\n]*)\n") do y("  %s", l) end
  local yaml = table.concat(Y, "\n") .. "\n"

  local readme = ("# %s: candidate contract\n\n```\n%s```\n\nRecipe: `%s.yaml`. Reference: "
    .. "`problem.py` (the problem file as imported). `description.json`: what the PyTorch "
    .. "bridge saw when it ran the model once.\n"):format(name, contract, name)
  return {name = name, yaml = yaml, readme = readme, signature = signature, launch = launch,
          tensors = tensors, params = params, contract = contract,
          tolerance_note = tol.f32 and ("tolerance f32 atol %.3g rtol %.3g: %s"):format(
            tol.f32.atol, tol.f32.rtol, tol.why)}
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

local USAGE =
  "usage: kevo import FILE.py [--out DIR] [--name NAME] [--description DESC.json] [--force]"

-- `kevo import`: returns the exit code (1 the bridge failed, 2 bad usage or input) with the
-- reason on stderr, or 0 and the plan: {dirs = {...}, files = {{path =, text =}, ...},
-- message =} for the caller to carry out.
function M.main(argv, host)
  local o = {out = "recipes"}
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if a == "--out" or a == "--name" or a == "--description" or a == "--python" then
      if not argv[i + 1] then io.stderr:write(USAGE, "\n"); return 2 end
      o[a:sub(3)] = argv[i + 1]
      i = i + 2
    elseif a == "--force" then
      o.force, i = true, i + 1
    elseif a:sub(1, 1) == "-" then
      io.stderr:write(("kevo import: unknown option '%s'\n%s\n"):format(a, USAGE))
      return 2
    elseif o.file then
      io.stderr:write(USAGE, "\n")
      return 2
    else
      o.file, i = a, i + 1
    end
  end
  if not o.file then io.stderr:write(USAGE, "\n"); return 2 end
  local src = host.read_file(o.file)
  if not src then
    io.stderr:write(("kevo import: %s: cannot read it\n"):format(o.file))
    return 2
  end
  -- cheap checks before starting python: the three names a problem must define
  for _,
  n in ipairs{"class%s+Model%f[^%w_]", "def%s+get_inputs%s*%(", "def%s+get_init_inputs%s*%("} do
    if not src:match(n) then
      local what = n:match("^class") and "class Model" or n:match("init") and "get_init_inputs()"
                   or "get_inputs()"
      io.stderr:write(("kevo import: %s: not a KernelBench problem: it defines no %s (a problem "
        .. "defines class Model(nn.Module), get_inputs() and get_init_inputs())\n"):format(o.file,
        what))
      return 2
    end
  end
  local text, err, code
  if o.description then
    text = host.read_file(o.description)
    if not text then
      io.stderr:write(("kevo import: %s: cannot read it\n"):format(o.description))
      return 2
    end
  else
    text, err, code = require("kevo.torchref").describe(o.file, {python = o.python})
    if not text then
      io.stderr:write(("kevo import: %s\n"):format(err))
      return code == "E_RECIPE" and 2 or 1
    end
  end
  local d, jerr = json.decode(text)
  if not d then
    io.stderr:write(("kevo import: the description is not JSON: %s\n"):format(jerr))
    return 2
  end
  local r, rerr = M.recipe(d, {name = o.name or o.file:match("([^/]+)%.py$")})
  if not r then
    io.stderr:write(("kevo import: %s: %s\n"):format(o.file, rerr))
    return 2
  end
  local yaml_path = o.out .. "/" .. r.name .. ".yaml"
  local dir = o.out .. "/" .. r.name
  if exists(yaml_path) and not o.force then
    io.stderr:write(("kevo import: %s exists (--force to overwrite)\n"):format(yaml_path))
    return 2
  end
  for _, path in ipairs{o.out, dir} do
    local ok, merr = host.mkdir(path)
    if not ok then io.stderr:write(("kevo import: %s\n"):format(merr)); return 1 end
  end
  for _, f in ipairs{{dir .. "/problem.py", src}, {dir .. "/description.json", text},
                     {dir .. "/README.md", r.readme}, {yaml_path, r.yaml}} do
    local fh, ferr = io.open(f[1], "wb")
    local ok, werr
    if fh then
      ok, werr = fh:write(f[2])
      fh:close()
    end
    if not ok then
      io.stderr:write(("kevo import: writing %s: %s\n"):format(f[1], tostring(ferr or werr)))
      return 1
    end
  end
  local peak = tonumber(not isnull(d.peak_gpu_bytes) and d.peak_gpu_bytes or nil)
  local foot = tonumber(not isnull(d.footprint_bytes) and d.footprint_bytes or nil)
  local fwd = tonumber(not isnull(d.forward_extra_bytes) and d.forward_extra_bytes or nil)
  local iob = tonumber(not isnull(d.io_bytes) and d.io_bytes or nil)
  -- the footprint is the peak of one reference forward (docs/kbench.md "The bridge")
  io.stdout:write(("imported %s -> %s\n%s%s%s"):format(o.file, yaml_path,
    r.tolerance_note and (r.tolerance_note .. "\n") or "",
    peak and foot and ("import peak GPU memory %.3g GiB for a problem of %.3g GiB%s%s\n"):format(
      peak / 2 ^ 30, foot / 2 ^ 30,
      iob and (" (the peak of one reference forward; inputs, weights and outputs %.3g GiB)")
        :format(iob / 2 ^ 30) or "",
      fwd and fwd > 0 and
      (" (its f32 forward adds %.3g GiB above its inputs)"):format(fwd / 2 ^ 30) or "")
    or "", r.contract))
  return 0
end

return M
