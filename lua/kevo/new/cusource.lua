-- kevo.new.cusource: what `kevo new` reads from a user's CUDA source: its extern "C"
-- __global__ kernels and their signatures, the knobs (`#ifndef X / #define X v / #endif`), and
-- the kevo:launch block. A reader for kernels as people write them, not a C++ parser: comments,
-- whitespace, __restrict__, const on either side of the type, __launch_bounds__(...) and
-- `extern "C" { ... }` blocks are understood; templates and macros in signatures are not.
--
--   local cu = require "kevo.new.cusource"
--   cu.kernels(src)  --> {{name =, params = {{name =, ctype =, pointer =, const =, dtype =,
--                         scalar = "int"|"float"|nil, wrap = "i32"|...}, ...}, line =}, ...}
--                        or nil, msg
--   cu.knobs(src)    --> {{name =, default = "256", value = 256|"word"|nil, line =}, ...}
--   cu.launch(src)   --> text, line | nil (no block) | nil, msg (a block never closed)
local textsplit = require "kevo.textsplit"

local M = {}

-- Element types of tensors (pointer parameters) kevo has dtypes for; the spelling is normalized
-- first (qualifiers removed, whitespace collapsed).
M.DTYPE = {
  ["float"] = "f32", ["double"] = "f64", ["__half"] = "f16", ["half"] = "f16",
  ["__nv_bfloat16"] = "bf16", ["nv_bfloat16"] = "bf16",
  ["int"] = "i32", ["signed int"] = "i32", ["signed"] = "i32", ["int32_t"] = "i32",
  ["long long"] = "i64", ["long long int"] = "i64", ["signed long long"] = "i64",
  ["int64_t"] = "i64", ["unsigned char"] = "u8", ["uint8_t"] = "u8",
  ["signed char"] = "i8", ["int8_t"] = "i8", ["bool"] = "bool",
  ["__nv_fp8_e4m3"] = "f8e4m3", ["__nv_fp8_e5m2"] = "f8e5m2",
}
M.DTYPES_TEXT = "float (f32), double (f64), __half (f16), __nv_bfloat16 (bf16), int/int32_t (i32), "
  .. "long long/int64_t (i64), unsigned char/uint8_t (u8), signed char/int8_t (i8), bool (bool), "
  .. "__nv_fp8_e4m3 (f8e4m3), __nv_fp8_e5m2 (f8e5m2)"

-- Scalar parameters: integers are sizes (params of the recipe), floats constants the launch
-- chunk passes. The value is the scalar wrapper a launch chunk uses for that C type.
M.INT_SCALAR = {
  ["int"] = "i32", ["signed int"] = "i32", ["signed"] = "i32", ["int32_t"] = "i32",
  ["long long"] = "i64", ["long long int"] = "i64", ["signed long long"] = "i64",
  ["int64_t"] = "i64", ["unsigned"] = "u32", ["unsigned int"] = "u32", ["uint32_t"] = "u32",
  ["unsigned long long"] = "u64", ["unsigned long long int"] = "u64", ["uint64_t"] = "u64",
  ["size_t"] = "u64", ["long"] = "i64", ["unsigned long"] = "u64",
}
M.FLOAT_SCALAR = {["float"] = "f32", ["double"] = "f64"}

-- Blanks out comments and the contents of string and character literals (keeping newlines, so
-- offsets and line numbers stay those of the source). String contents are kept for `extern "C"`
-- to stay readable: only quotes' insides other than "C" are blanked.
function M.strip(src)
  local out, i, n = {}, 1, #src
  while i <= n do
    local c, d = src:sub(i, i), src:sub(i, i + 1)
    if d == "//" then
      local j = src:find("\n", i, true) or n + 1
      out[#out + 1] = (" "):rep(j - i)
      i = j
    elseif d == "/*" then
      local j = src:find("*/", i + 2, true)
      local stop = j and j + 1 or n
      out[#out + 1] = src:sub(i, stop):gsub("[^\n]", " ")
      i = stop + 1
    elseif c == '"' or c == "'" then
      local j = i + 1
      while j <= n and src:sub(j, j) ~= c and src:sub(j, j) ~= "\n" do
        if src:sub(j, j) == "\\" then j = j + 1 end
        j = j + 1
      end
      local lit = src:sub(i, j)
      if lit ~= '"C"' then lit = c .. lit:sub(2, -2):gsub("[^\n]", " ") .. lit:sub(-1) end
      out[#out + 1] = lit
      i = j + 1
    else
      out[#out + 1] = c
      i = i + 1
    end
  end
  return table.concat(out)
end

local function line_at(src, pos)
  local _, k = src:sub(1, pos):gsub("\n", "")
  return k + 1
end

local function norm(s)
  return (s:gsub("%s+", " "):gsub("^ ", ""):gsub(" $", ""))
end

-- One parameter's text -> its description, or nil, msg.
local function param(text, index)
  local t = " " .. text:gsub("[%*&%[%]]", " %0 ") .. " "
  for _, q in ipairs{"__restrict__", "__restrict", "restrict", "volatile", "register"} do
    t = t:gsub("%f[%w_]" .. q .. "%f[^%w_]", " ")
  end
  t = norm(t)
  if t:find("&", 1, true) then return nil, ("parameter %d '%s': a reference; kernels take values "
      .. "and pointers"):format(index, norm(text)) end
  if t:find("[", 1, true) then return nil, ("parameter %d '%s': write an array parameter as a "
      .. "pointer (T* name)"):format(index, norm(text)) end
  local name = t:match("([%a_][%w_]*)$")
  if not name then return nil, ("parameter %d '%s': no name (kevo names tensors after the "
      .. "parameters)"):format(index, norm(text)) end
  t = norm(t:sub(1, #t - #name))
  local stars = select(2, t:gsub("%*", ""))
  if stars > 1 then return nil, ("parameter '%s': a pointer to a pointer; kevo passes one "
      .. "pointer per tensor"):format(name) end
  local p = {name = name, pointer = stars == 1}
  local base = t
  if p.pointer then
    local left = t:match("^(.-)%*")
    base = left -- `const` after the star is the pointer's own, not the data's
  end
  p.const = base:find("%f[%w_]const%f[^%w_]") ~= nil
  base = norm(base:gsub("%f[%w_]const%f[^%w_]", " "))
  p.ctype = base
  if p.pointer then
    p.dtype = M.DTYPE[base]
    if not p.dtype then
      return nil, ("parameter '%s': element type '%s' is not one kevo has (%s)"):format(name,
        base, M.DTYPES_TEXT)
    end
  elseif M.INT_SCALAR[base] then
    p.scalar, p.wrap = "int", M.INT_SCALAR[base]
  elseif M.FLOAT_SCALAR[base] then
    p.scalar, p.wrap = "float", M.FLOAT_SCALAR[base]
  else
    return nil, ("parameter '%s': scalar type '%s' is not supported (integers are sizes, float "
      .. "and double constants; structs and vector types are not)"):format(name, base)
  end
  return p
end

-- Splits a parameter list at top-level commas.
local function split_params(list)
  return textsplit.top(list, ",", "(<[")
end

-- Every `__global__` kernel of src, in order. A kernel outside extern "C" is listed with
-- extern_c = false (its name is mangled in the cubin: the caller refuses it). A parameter kevo
-- cannot take is recorded as the kernel's `error` rather than failing the whole file.
function M.kernels(src)
  local s = M.strip(src)
  -- extern "C" { ... } blocks: the ranges they cover
  local blocks = {}
  for a, open in s:gmatch('()extern%s*"C"%s*(){') do
    local body = s:match("^%b{}", open)
    if body then blocks[#blocks + 1] = {a, open + #body} end
  end
  local found = {}
  local init = 1
  while true do
    local g, after = s:match("()__global__()", init)
    if not g then break end
    init = after
    -- the declaration runs from the end of the previous statement to the parameter list
    local before = s:sub(1, g - 1)
    local stmt_start = 1
    for p in before:gmatch("()[;}{]") do stmt_start = p + 1 end
    local head = s:sub(stmt_start, g - 1)
    local rest = s:sub(after):gsub("__launch_bounds__%s*%b()", function(x) return (" "):rep(#x) end)
    local name, plist = rest:match("^%s*void%s+([%a_][%w_]*)%s*(%b())")
    if not name then
      local other = rest:match("^%s*([%a_][%w_]*)")
      if other ~= "void" and other ~= nil then
        found[#found + 1] = {name = other, line = line_at(src, g),
                             error = "a __global__ function returns void (templates and macros "
                               .. "before the name are not read)"}
      end
    else
      local extern_c = head:find('extern%s*"C"') ~= nil
      for _, b in ipairs(blocks) do
        if g > b[1] and g < b[2] then extern_c = true end
      end
      local k = {name = name, params = {}, line = line_at(src, g), extern_c = extern_c}
      local inner = norm(plist:sub(2, -2))
      if inner ~= "" and inner ~= "void" then
        for i, item in ipairs(split_params(inner)) do
          local p, err = param(item, i)
          if not p then k.error = err break end
          k.params[#k.params + 1] = p
        end
      end
      found[#found + 1] = k
    end
  end
  return found
end

-- The knobs: `#ifndef X` directly followed by `#define X value`. value is a number when the
-- default is a numeric literal, the word when it is an identifier, nil otherwise (an expression
-- is not a knob value kevo can list; the caller reports it).
function M.knobs(src)
  local s = M.strip(src)
  local out, seen = {}, {}
  for pos, name, name2,
  def in s:gmatch("()#%s*ifndef%s+([%a_][%w_]*)%s*\n%s*#%s*define%s+([%a_][%w_]*)[ \t]*([^\n]*)") do
    if name == name2 and not seen[name] then
      seen[name] = true
      def = norm(def)
      local v = math.tointeger(tonumber(def)) or tonumber(def)
      if not v and def:match("^[%a_][%w_]*$") then v = def end
      out[#out + 1] = {name = name, default = def, value = v, line = line_at(src, pos)}
    end
  end
  return out
end

-- The first /* kevo:launch ... */ block (the marker directly after the comment opener, as the
-- runtime reads it): its text and the line of the marker; nil when there is none; nil, msg when
-- one is never closed.
function M.launch(src)
  local from = 1
  while true do
    local a, b = src:find("kevo:launch", from, true)
    if not a then return nil end
    from = b + 1
    if src:sub(1, a - 1):match("/%*[ \t]*$") then
      local close = src:find("*/", b + 1, true)
      if not close then
        return nil, ("line %d: the kevo:launch comment is never closed"):format(line_at(src, a))
      end
      return src:sub(b + 1, close - 1), line_at(src, a)
    end
  end
end

return M
