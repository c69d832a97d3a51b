-- kevo.extract.cuda: a reply's CUDA C made into what kevo compiles, device code alone.
--
-- Models write kernels with their host side: a PyTorch wrapper and PYBIND11_MODULE (the
-- load_inline style of KernelBench), a main() that tests the kernel, #include <torch/extension.h>.
-- kevo compiles with NVRTC (no host compiler) and launches kernels itself from the kevo:launch
-- block, so that host side is dropped, each piece replaced by a comment that names it.
--
--   local cu = require "kevo.extract.cuda"
--   cu.device_only(src) -> src2, notes
--       Drops the #includes of host headers, top-level functions that are not __global__ or
--       __device__ and use host APIs (<<<...>>> launches, torch::, at::, cudaMalloc..., main,
--       PYBIND11_MODULE), and declarations of torch functions; adds extern "C" to top-level
--       __global__ kernels that lack it (kevo finds kernels by their names), when no template or
--       overload makes that wrong. A template kernel that only the dropped host code
--       instantiates (k<float><<<...>>>, k<scalar_t> in AT_DISPATCH: float) becomes a __device__
--       template called by an extern "C" kernel of its name with those arguments.
--       notes: what changed, one string each ({}: src2 == src).
--   cu.from_python(code) -> src, notes | nil
--       The CUDA source held by a Python program's strings (load_inline's cuda_sources,
--       cupy.RawKernel), when one defines a __global__ kernel: every string value that looks
--       like CUDA (a kernel, __device__ helpers, #define or #include <...> lines: a source
--       built from pieces), in order. A value is a
--       literal (triple-quoted or not, escapes decoded) or literals that concatenate (side by
--       side across lines, or joined by +); an f-string's {{ }} become braces and {NAME} the
--       value of a module constant NAME = <number>, and so do str.format's fields from the
--       call's arguments ("...".format(B=256), or src.format(...) on the name it is bound to).
-- A reader for code as models write it, not a C++ parser: a top-level item ends at a `;` or at
-- the `}` that closes a function body; comments and string literals are skipped.
local textsplit = require "kevo.textsplit"

local M = {}

local HOST_INCLUDE_DIRS = {"torch/", "ATen/", "c10/", "pybind11/"}
local HOST_INCLUDES = {
  ["Python.h"] = true, iostream = true, vector = true, string = true, map = true,
  unordered_map = true, memory = true, stdexcept = true, sstream = true, fstream = true,
  chrono = true, thread = true, mutex = true, functional = true, iomanip = true, random = true,
  -- standard headers kevo does not provide to device code, included for the host side
  array = true, tuple = true, numeric = true, iterator = true, initializer_list = true,
  set = true, unordered_set = true, list = true, deque = true, queue = true, stack = true,
  bitset = true, optional = true, variant = true, exception = true, cstdarg = true,
}

-- What only host code does (patterns over a function's text).
local HOST_USES = {
  "<<<", "%f[%w_]torch::", "%f[%w_]at::", "%f[%w_]c10::", "TORCH_CHECK", "AT_DISPATCH",
  "PYBIND11_MODULE", "%f[%w_]py::", "%f[%w_]cuda%u%w*%s*%(", "%f[%w_]std::cout",
  "%f[%w_]std::cerr", "%f[%w_]std::vector", "%f[%w_]std::string", "%f[%w_]main%s*%(",
  "%f[%w_]malloc%s*%(", "%f[%w_]fprintf%s*%(", "%f[%w_]exit%s*%(",
  "%f[%w_]std::array", "%f[%w_]std::tuple", "%f[%w_]std::make_tuple", "%f[%w_]std::accumulate",
  "%f[%w_]std::map", "%f[%w_]std::set", "%f[%w_]std::unordered_", "%f[%w_]std::list",
  "%f[%w_]std::deque", "%f[%w_]std::optional", "%f[%w_]std::function", "%f[%w_]std::thread",
}
-- Declarations (no body) that only host code can read.
local HOST_DECLS = {"%f[%w_]torch::", "%f[%w_]at::", "%f[%w_]py::", "%f[%w_]std::vector",
                    "^using%s+namespace%s+torch%f[^%w_]", "^using%s+namespace%s+at%f[^%w_]",
                    "^using%s+namespace%s+c10%f[^%w_]", "^using%s+namespace%s+pybind11%f[^%w_]",
                    "^namespace%s+[%w_]+%s*=%s*pybind11%f[^%w_]"}

local function any(text, pats)
  for _, p in ipairs(pats) do
    if text:find(p) then return true end
  end
  return false
end

local function is_host_header(name)
  if HOST_INCLUDES[name] then return true end
  for _, d in ipairs(HOST_INCLUDE_DIRS) do
    if name:sub(1, #d) == d then return true end
  end
  return false
end

-- Past a comment or a string/char literal starting at i, or nil when there is none at i.
local function skip_lexeme(src, i)
  local two = src:sub(i, i + 1)
  if two == "//" then
    local e = src:find("\n", i, true)
    return e or #src + 1
  elseif two == "/*" then
    local _, e = src:find("*/", i + 2, true)
    return e and e + 1 or #src + 1
  end
  local q = src:sub(i, i)
  if q == '"' or q == "'" then
    local j = i + 1
    while j <= #src do
      local ch = src:sub(j, j)
      if ch == "\\" then
        j = j + 2
      elseif ch == q or ch == "\n" then
        return j + 1
      else
        j = j + 1
      end
    end
    return j
  end
  return nil
end

-- Top-level items of src, in order: {text =, kind = "pp"|"code"}. Together they are src.
local function split_items(src)
  local items, start, i, n = {}, 1, 1, #src
  local depth, paren, line_start = 0, 0, true
  local function push(stop, kind)
    if stop >= start then items[#items + 1] = {text = src:sub(start, stop), kind = kind} end
    start = stop + 1
  end
  while i <= n do
    local ch = src:sub(i, i)
    local past = skip_lexeme(src, i)
    if past then
      i = past
      line_start = src:sub(i - 1, i - 1) == "\n"
    elseif ch == "\n" then
      i, line_start = i + 1, true
    elseif line_start and (ch == " " or ch == "\t") then
      i = i + 1
    elseif line_start and ch == "#" and depth == 0 and paren == 0 then
      -- a directive line (with its continuations) is an item of its own; code before it that
      -- is not only blanks and comments ends there
      local line_begin = i
      while line_begin > start and src:sub(line_begin - 1, line_begin - 1) ~= "\n" do
        line_begin = line_begin - 1
      end
      local pending = src:sub(start, line_begin - 1)
      local stripped = pending:gsub("/%*.-%*/", ""):gsub("//[^\n]*", "")
      if stripped:find("%S") then push(line_begin - 1, "code") end
      local j = i
      repeat
        local e = src:find("\n", j, true) or n + 1
        local cont = src:sub(e - 1, e - 1) == "\\"
        j = e + 1
      until not cont or j > n
      push(math.min(j - 1, n), "pp")
      i, line_start = j, true
    else
      line_start = false
      if ch == "{" then
        depth = depth + 1
      elseif ch == "}" then
        depth = depth - 1
        if depth == 0 and paren == 0 then
          local head = src:sub(start, i):match("^[^{]*")
          local needs_semicolon = head:find("%f[%w_]struct%f[^%w_]") or
            head:find("%f[%w_]class%f[^%w_]") or head:find("%f[%w_]union%f[^%w_]") or
            head:find("%f[%w_]enum%f[^%w_]") or head:find("=%s*$")
          if not needs_semicolon then push(i, "code") end
        end
      elseif ch == "(" then
        paren = paren + 1
      elseif ch == ")" then
        paren = paren - 1
      elseif ch == ";" and depth == 0 and paren == 0 then
        push(i, "code")
      end
      i = i + 1
    end
  end
  push(n, "code")
  return items
end

-- An item's leading blanks and comments, and the rest.
local function lead_and_body(text)
  local i = 1
  while true do
    local s = text:match("^%s*", i)
    i = i + #s
    local past = (text:sub(i, i + 1) == "//" or text:sub(i, i + 1) == "/*") and skip_lexeme(text, i)
    if not past then break end
    i = past
  end
  return text:sub(1, i - 1), text:sub(i)
end

-- The name a function's head declares: the identifier before the parameter list, past
-- attributes that take arguments (__launch_bounds__(256, 2), __attribute__((...))).
local function declared_name(head)
  local h = head:gsub("__launch_bounds__%s*%b()", ""):gsub("__attribute__%s*%b()", "")
  h = h:gsub("__declspec%s*%b()", ""):gsub("alignas%s*%b()", "")
  return h:match("([%w_:~]+)%s*%(")
end

-- A block whose body holds top-level items of its own: `namespace X {`, `extern "C" {`.
local function scope_of(head)
  if head:find('^extern%s*"C"%s*$') then return "extern_c" end
  if head:find("^namespace[%s%w_:]*$") or head:find("^inline%s+namespace[%s%w_:]*$") then
    return "namespace"
  end
  return nil
end

-- Splits a list at its top-level commas (none inside (), <>, [] or {}).
local function split_commas(list)
  return textsplit.top(list, ",", "(<[{")
end

-- The one set of template arguments the dropped host code launches template kernel `name`
-- with (name<float><<<...>>>; AT_DISPATCH's scalar_t is float), or nil when there is not one.
local function launched_with(host, name)
  local seen, only, count = {}, nil, 0
  for args in host:gmatch("%f[%w_]" .. name .. "%s*(%b<>)%s*<<<") do
    args = args:sub(2, -2):gsub("%s+", " "):gsub("^ ", ""):gsub(" $", "")
    if not seen[args] then seen[args], only, count = true, args, count + 1 end
  end
  if count ~= 1 then return nil end
  local vals = split_commas(only)
  for i, v in ipairs(vals) do
    v = v:gsub("^%s+", ""):gsub("%s+$", "")
    if v == "scalar_t" and host:find("AT_DISPATCH", 1, true) then v = "float" end
    vals[i] = v
  end
  return vals
end

-- A template kernel kevo cannot name (it is instantiated only by the host code kevo drops) made
-- a __device__ template, called by an extern "C" kernel of its name with the template
-- arguments the host code used. nil when its parameters cannot be forwarded.
local function wrap_template_kernel(body, name, vals)
  local tparams = body:match("^%s*template%s*(%b<>)")
  local head = body:match("^[^{]*")
  local at = head:find("%f[%w_]" .. name .. "%s*%(")
  local params = at and head:match("%b()", at)
  if not (tparams and params) then return nil end
  local tnames = {}
  for _, p in ipairs(split_commas(tparams:sub(2, -2))) do
    tnames[#tnames + 1] = p:gsub("=.*$", ""):match("([%w_]+)%s*$")
  end
  if #tnames ~= #vals then return nil end
  local function bind(text)
    for i, n in ipairs(tnames) do text = text:gsub("%f[%w_]" .. n .. "%f[^%w_]", vals[i]) end
    return text
  end
  local args = {}
  if params:find("%S", 2) and params ~= "()" then
    for _, p in ipairs(split_commas(params:sub(2, -2))) do
      local n = p:gsub("=.*$", ""):gsub("%b[]", ""):match("([%w_]+)%s*$")
      if not n or p:match("^%s*[%w_]+%s*$") then return nil end -- an unnamed parameter
      args[#args + 1] = n
    end
  end
  local bounds = head:match("__launch_bounds__%s*%b()")
  local impl = name .. "_kevo_impl"
  local new_head = head:gsub("__launch_bounds__%s*%b()", "", 1)
    :gsub("__global__", "__device__ __forceinline__", 1)
    :gsub("%f[%w_]" .. name .. "(%s*%()", impl .. "%1", 1)
  local trail = body:match("\n*$")
  return new_head .. body:sub(#head + 1, #body - #trail) .. "\n\n" ..
    'extern "C" __global__ void ' .. (bounds and bind(bounds) .. " " or "") .. name ..
    bind(params) .. " {\n  " .. impl .. "<" .. table.concat(vals, ", ") .. ">(" ..
    table.concat(args, ", ") .. ");\n}" .. trail
end

local device_only

-- A namespace or extern "C" block, its body taken through device_only like a file of its own.
local function open_scope(it, scope, in_extern_c)
  local open = it.body:find("{", 1, true)
  local close = #it.body - (it.body:reverse():find("}", 1, true) or 1) + 1
  local inner, notes = device_only(it.body:sub(open + 1, close - 1),
                                   in_extern_c or scope == "extern_c")
  if #notes == 0 then return nil end
  return it.lead .. it.body:sub(1, open) .. inner .. it.body:sub(close), notes
end

function M.device_only(src)
  assert(type(src) == "string", "extract.cuda.device_only: src must be a string")
  return device_only(src, false)
end

-- in_extern_c: src is the body of an extern "C" block (its kernels have C linkage already).
function device_only(src, in_extern_c)
  local items = split_items(src)
  local notes, dropped, out = {}, {}, {}
  local kernels = {} -- top-level __global__ items that may get extern "C": name -> count
  for _, it in ipairs(items) do
    local lead, body = lead_and_body(it.text)
    it.lead, it.body = lead, body
    if it.kind == "pp" then
      local name = body:match("^#%s*include%s*[<\"]([^>\"]+)[>\"]")
      if name and is_host_header(name) then it.drop = "#include <" .. name .. ">" end
    elseif body:find("%S") then
      local head = body:match("^[^{]*")
      local has_body = #head < #body
      local device = head:find("__global__", 1, true) or head:find("__device__", 1, true)
      local scope = has_body and scope_of(head:gsub("%s+$", ""))
      if scope then
        it.scope = scope
      elseif not device and has_body and head:find("%)[%s%w_]*$") and any(body, HOST_USES) then
        it.drop = "host function " .. (declared_name(head) or "?")
      elseif not device and not has_body and any(body, HOST_DECLS) then
        it.drop = "host declaration " .. (declared_name(head) or
                                          body:match("^[^;\n]*"):gsub("%s+", " "))
      elseif has_body and head:find("__global__", 1, true) and head:find("^%s*template%s*<") then
        it.template_kernel = declared_name(head)
      elseif head:find("__global__", 1, true) and not head:find('extern%s*"C"') and
             not in_extern_c and not head:find("%f[%w_]template%f[^%w_]") then
        local name = declared_name(head)
        if name then -- definitions are counted (overloads); a prototype follows its definition
          if has_body then kernels[name] = (kernels[name] or 0) + 1 end
          it.kernel = name
        end
      end
    end
  end
  local host = {}
  for _, it in ipairs(items) do
    if it.drop and it.kind ~= "pp" then host[#host + 1] = it.body end
  end
  host = table.concat(host, "\n")
  local wrapped = {}
  for _, it in ipairs(items) do
    local name = it.template_kernel
    -- explicitly instantiated in the source (template __global__ void k<float>(...);): as written
    if name and not src:find("%f[%w_]template%s+[%w_%s]*%f[%w_]" .. name .. "%s*<") then
      local vals = launched_with(host, name)
      local text = vals and wrap_template_kernel(it.body, name, vals)
      if text then
        it.wrapped = it.lead .. text
        wrapped[#wrapped + 1] = name .. "<" .. table.concat(vals, ", ") .. ">"
      end
    end
  end
  local externed, inner_notes = {}, {}
  for _, it in ipairs(items) do
    local scoped, more = nil, nil
    if it.scope then scoped, more = open_scope(it, it.scope, in_extern_c) end
    if scoped then
      out[#out + 1] = scoped
      for _, n in ipairs(more) do inner_notes[#inner_notes + 1] = n end
    elseif it.wrapped then
      out[#out + 1] = it.wrapped
    elseif it.drop then
      dropped[#dropped + 1] = it.drop
      local why = it.kind == "pp" and "a host header" or
        "kevo compiles device code only and launches the kernels itself"
      out[#out + 1] = it.lead .. "/* kevo: dropped " .. it.drop .. " (" .. why .. ") */" ..
        (it.body:match("\n*$") or "")
    elseif it.kernel and kernels[it.kernel] == 1 then
      if externed[#externed] ~= it.kernel then externed[#externed + 1] = it.kernel end
      out[#out + 1] = it.lead .. it.body:gsub("__global__", 'extern "C" __global__', 1)
    else
      out[#out + 1] = it.text
    end
  end
  if #dropped > 0 then notes[#notes + 1] = "dropped host code: " .. table.concat(dropped, ", ") end
  if #externed > 0 then
    notes[#notes + 1] = 'declared extern "C" (kevo finds kernels by name): ' ..
      table.concat(externed, ", ")
  end
  if #wrapped > 0 then
    notes[#notes + 1] = "the template kernel(s) the dropped host code launched became an " ..
      'extern "C" kernel of the same name: ' .. table.concat(wrapped, ", ")
  end
  for _, n in ipairs(inner_notes) do notes[#notes + 1] = n end
  if #notes == 0 then return src, notes end
  return table.concat(out), notes
end

-- A Python string literal's body decoded (escapes of a non-raw literal; an f-string's {{ }}
-- and {NAME} of a module constant); unresolved: the f-string fields left as written.
local PY_ESCAPES = {n = "\n", t = "\t", r = "\r", ["\\"] = "\\", ["'"] = "'", ['"'] = '"',
                    a = "\a", b = "\b", f = "\f", v = "\v", ["0"] = "\0", ["\n"] = ""}

local function py_decode(body, prefix, consts, unresolved)
  local raw, fmt = prefix:find("[rR]") ~= nil, prefix:find("[fF]") ~= nil
  if not raw then
    body = body:gsub("\\x(%x%x)", function(h) return string.char(tonumber(h, 16)) end)
    body = body:gsub("\\(.)", function(c) return PY_ESCAPES[c] or ("\\" .. c) end)
  end
  if fmt then
    body = body:gsub("{{", "\1"):gsub("}}", "\2")
    body = body:gsub("{([^{}]*)}", function(field)
      local name = field:match("^%s*([%a_][%w_]*)%s*$")
      if name and consts[name] then return consts[name] end
      unresolved[#unresolved + 1] = field
      return nil
    end)
    body = body:gsub("\1", "{"):gsub("\2", "}")
  end
  return body
end

-- str.format applied to value with the call's arguments (numbers, string literals, module
-- constants); fields it cannot resolve are left as written and listed in unresolved.
local function py_format(value, args, consts, unresolved)
  local kw, pos = {}, {}
  for _, a in ipairs(split_commas(args:sub(2, -2))) do
    local k, v = a:match("^%s*([%a_][%w_]*)%s*=%s*(.-)%s*$")
    v = v or a:match("^%s*(.-)%s*$")
    v = v:match("^[\"'](.*)[\"']$") or consts[v] or (v:find("^%-?[%d%.]+$") and v) or nil
    if k then kw[k] = v else pos[#pos + 1] = v or false end
  end
  local next_pos = 0
  value = value:gsub("{{", "\1"):gsub("}}", "\2")
  value = value:gsub("{([^{}]*)}", function(field)
    local name = field:match("^([^:!]*)")
    local v
    if name == "" then
      next_pos = next_pos + 1
      v = pos[next_pos]
    elseif name:find("^%d+$") then
      v = pos[tonumber(name) + 1]
    else
      v = kw[name]
    end
    if v then return v end
    unresolved[#unresolved + 1] = field
    return nil
  end)
  return (value:gsub("\1", "{"):gsub("\2", "}"))
end

-- The string values of a Python program, in order: adjacent literals (implicit concatenation,
-- across lines inside brackets, or joined by +) as one value. consts: NAME = number or string
-- at column 0, for f-strings.
local function python_strings(code)
  local consts = {}
  for name, v in ("\n" .. code):gmatch("\n([%a_][%w_]*)%s*=%s*(%-?[%d%.]+)%s*[\n#]") do
    consts[name] = v
  end
  local out, cur, unresolved = {}, nil, {}
  local i, n, joinable = 1, #code, false
  while i <= n do
    local ch = code:sub(i, i)
    if ch == "#" then
      i = (code:find("\n", i, true) or n) + 1
    elseif ch:find("[%w_]") then
      local word = code:match("^[%w_]+", i)
      local q = code:sub(i + #word, i + #word)
      if (q == '"' or q == "'") and #word <= 2 and word:find("^[rRbBuUfF]+$") then
        i = i + #word -- a prefix: the literal follows
      else
        i, joinable, cur = i + #word, false, nil
      end
    elseif ch == '"' or ch == "'" then
      local prefix = code:sub(1, i - 1):match("[rRbBuUfF]*$")
      local q = code:sub(i, i + 2) == ch:rep(3) and ch:rep(3) or ch
      local j, stop = i + #q, nil
      while j <= n do
        local c = code:sub(j, j)
        if c == "\\" then
          j = j + 2
        elseif code:sub(j, j + #q - 1) == q then
          stop = j
          break
        elseif c == "\n" and #q == 1 then
          break
        else
          j = j + 1
        end
      end
      if not stop then break end
      local value = py_decode(code:sub(i + #q, stop - 1), prefix, consts, unresolved)
      if cur and joinable then
        cur.value = cur.value .. value
      else
        cur = {value = value,
               var = code:sub(1, i - #prefix - 1):match("([%a_][%w_]*)%s*=%s*%(?%s*$")}
        out[#out + 1] = cur
      end
      i, joinable = stop + #q, true
      cur.stop = i
    elseif ch == "+" or ch == "\\" or ch:find("%s") then
      i = i + 1 -- between literals that concatenate
    else
      i, joinable, cur = i + 1, false, nil
    end
  end
  for _, g in ipairs(out) do -- "...".format(...), on the literal or on the name it is bound to
    local args = code:match("^%s*%)?%s*%.format%s*(%b())", g.stop) or
      (g.var and code:match("%f[%w_]" .. g.var .. "%s*%.format%s*(%b())"))
    if args then g.value = py_format(g.value, args, consts, unresolved) end
  end
  return out, unresolved
end

-- M.from_python(code) -> src | nil, notes
function M.from_python(code)
  local parts, kernel = {}, false
  local strings, unresolved = python_strings(code)
  for _, s in ipairs(strings) do
    local v = s.value
    -- a kernel, or a piece of the same source (a prelude of #defines and helpers, a wrapper)
    local cuda = v:find("__global__", 1, true) or v:find("__device__", 1, true) or
      v:find("__constant__", 1, true) or v:find("^%s*#%s*define%s") or
      v:find("\n%s*#%s*define%s") or v:find("^%s*#%s*include%s*<") or
      v:find("\n%s*#%s*include%s*<")
    if cuda and not v:find("^%s*kevo:launch") then
      parts[#parts + 1] = (v:gsub("^\r?\n", ""))
      kernel = kernel or v:find("__global__", 1, true) ~= nil
    end
  end
  if not kernel then return nil end
  local notes = {}
  if #unresolved > 0 then
    notes[#notes + 1] = "left f-string fields kevo could not resolve as written: {" ..
      table.concat(unresolved, "}, {") .. "}"
  end
  return table.concat(parts, "\n"), notes
end

return M
