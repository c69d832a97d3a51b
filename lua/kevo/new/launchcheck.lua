-- kevo.new.launchcheck: `kevo new`'s checks of a launch chunk against the kernels of a
-- source (kevo.new.cusource), and the block it suggests when a source has none.
--
--   lc.check(chunk, where, shape, knobs, main, kernels, tensors, bad) -> {float name = value} | nil
--   lc.suggest(kernel, tensors, knobs, product) -> "/* kevo:launch ... */"
local M = {}

-- Runs the launch chunk on a shape in a small environment shaped like the runtime's sandbox
-- and checks what it returns against the signatures. Returns the float constants the main
-- kernel receives ({name = value}), or nil when the chunk needs the device (checked on a GPU).
function M.check(chunk, where, shape, knobs, main, kernels, tensors, bad)
  local function wrap(kind) return function(v) return {wrap = kind, value = v} end end
  local function cdiv(a, b) -- as the runtime's (launch.c): a zero block size is said plainly
    local ia, ib = math.tointeger(a), math.tointeger(b)
    if not ia or not ib then error("cdiv(a, b): a and b must be integers", 0) end
    if ib <= 0 then error(("cdiv(a, b): b must be > 0, got %d"):format(ib), 0) end
    return ia >= 0 and (ia + ib - 1) // ib or -((-ia) // ib)
  end
  local env = {cdiv = cdiv, min = math.min, max = math.max,
               i32 = wrap("i32"), i64 = wrap("i64"), u32 = wrap("u32"), u64 = wrap("u64"),
               f32 = wrap("f32"), f64 = wrap("f64"), null = {null = true},
               ptr = function(n) return {buf = n} end}
  for k, v in pairs(shape.params) do env[k] = v end
  for _, k in ipairs(knobs) do env[k.name] = k.value end
  local NEEDS_DEVICE = {}
  setmetatable(env, {__index = function(_, k)
    if k == "device" then error(NEEDS_DEVICE, 0) end
    error(("reads '%s', which is neither a param (%s), a knob, nor a launch function"):format(
      tostring(k), table.concat(shape.names, ", ")), 2)
  end})
  local fn, err = load(chunk, "=" .. where, "t", env)
  if not fn then bad("%s: %s", where, err) end
  debug.sethook(function() error("the launch chunk ran past its instruction budget", 0) end, "",
    10000000)
  local ok, res = pcall(fn)
  debug.sethook()
  if not ok and res == NEEDS_DEVICE then return nil end
  local at = ("%s (at %s)"):format(where, shape.label)
  if not ok then bad("%s: %s", at, tostring(res)) end
  if type(res) ~= "table" or type(res.kernels) ~= "table" or #res.kernels == 0 then
    bad("%s: the chunk must return {kernels = {{name =, grid =, block =, args =}, ...}}", at)
  end
  local by_name, scratch = {}, {}
  for _, k in ipairs(kernels) do by_name[k.name] = k end
  for n in pairs(type(res.scratch) == "table" and res.scratch or {}) do scratch[n] = true end
  local is_tensor = {}
  for _, t in ipairs(tensors) do is_tensor[t.name] = true end
  local consts, launched_main = {}, false
  for i, l in ipairs(res.kernels) do
    local lw = ("%s: kernels[%d]"):format(at, i)
    local sig = by_name[l.name]
    if not sig then
      bad("%s: launches '%s', which is no __global__ kernel of the file", lw, tostring(l.name))
    end
    for _, dim in ipairs{"grid", "block"} do
      local d = l[dim]
      if type(d) ~= "table" or #d < 1 or #d > 3 then
        bad("%s.%s: expected 1 to 3 integers", lw, dim)
      end
      for _, x in ipairs(d) do
        if math.type(x) ~= "integer" or x < 1 then
          bad("%s.%s: %s is not a positive integer", lw, dim, tostring(x))
        end
      end
    end
    local threads = l.block[1] * (l.block[2] or 1) * (l.block[3] or 1)
    if threads > 1024 then bad("%s.block: %d threads per block (at most 1024)", lw, threads) end
    local args = type(l.args) == "table" and l.args or {}
    if #args ~= #sig.params then
      bad("%s: %d arguments for %s, whose signature takes %d", lw, #args, sig.name, #sig.params)
    end
    for j, p in ipairs(sig.params) do
      local a = args[j]
      local bufname = type(a) == "string" and a or type(a) == "table" and a.buf
      if p.pointer then
        if type(a) == "table" and a.null then
          if sig == main then
            bad("%s: argument %d (%s) is null; it is a tensor of the recipe", lw, j, p.name)
          end
        elseif not bufname then
          bad("%s: argument %d (%s) is a pointer: pass a tensor name (\"%s\")", lw, j, p.name,
            p.name)
        elseif sig == main and bufname ~= p.name then
          bad("%s: argument %d is \"%s\" but the parameter is %s: tensors are named after the "
            .. "kernel's parameters", lw, j, bufname, p.name)
        elseif not is_tensor[bufname] and not scratch[bufname] then
          bad("%s: argument %d names '%s', which is neither a tensor nor scratch", lw, j, bufname)
        end
      else
        local v = type(a) == "table" and a.value or a
        if type(v) ~= "number" then
          bad("%s: argument %d (%s %s) is a scalar: pass a number (%s(...))", lw, j, p.ctype,
            p.name, p.wrap)
        end
        if p.scalar == "int" and math.type(v) ~= "integer" then
          bad("%s: argument %d (%s %s) is not an integer", lw, j, p.ctype, p.name)
        end
        if sig == main and p.scalar == "float" then consts[p.name] = v end
      end
    end
    if sig == main then launched_main = true end
  end
  if not launched_main then bad("%s: the chunk never launches %s", at, main.name) end
  return consts
end

-- The launch block offered when a file has none: built from the signature, for the user to
-- check against the kernel's indexing (kevo cannot: the kernel is its own reference).
function M.suggest(k, tensors, knobs, product)
  local args, first_out = {}, nil
  for _, p in ipairs(k.params) do
    if p.pointer then args[#args + 1] = ('"%s"'):format(p.name)
    elseif p.scalar == "int" then args[#args + 1] = ("%s(%s)"):format(p.wrap, p.name)
    else args[#args + 1] = ("%s(1.0)"):format(p.wrap) end
  end
  for _, t in ipairs(tensors) do if t.role == "output" and not first_out then first_out = t end end
  local block = "256"
  for _, kn in ipairs(knobs) do
    if (kn.name == "BLOCK" or kn.name == "BLOCK_SIZE" or kn.name == "THREADS") and
      math.type(kn.value) == "integer" then
      block = kn.name
    end
  end
  local n = first_out and product(first_out.dims) or "N"
  return (
    "/* kevo:launch\nreturn {kernels = {{name = \"%s\", grid = {cdiv(%s, %s)}, block = {%s},\n"
    .. "                    args = {%s}}}}\n*/"):format(k.name, n, block, block,
    table.concat(args, ", "))
end

return M
