-- kevo.extract.triton: a reply's Triton module made into what kevo compiles.
--
-- Models write a Triton kernel with its Python side: import torch, a launcher that allocates the
-- output and calls kernel[grid](...), class ModelNew, @triton.autotune. kevo's compile server
-- takes only what a kernel needs (docs/triton.md "The sandbox": imports of triton and math,
-- @triton.jit functions, constants, strings) and kevo launches the kernel itself from the
-- kevo:launch block, so the rest is dropped, each statement replaced by a comment naming it.
--
--   local tr = require "kevo.extract.triton"
--   tr.kernel_only(code) -> code2, notes, problem
--       Keeps comments, strings, imports of triton and math, @triton.jit functions (other
--       decorators removed) and constant assignments; drops every other top-level statement.
--       A tl.constexpr parameter without a default takes the value the dropped code gave it
--       (the autotuner's first triton.Config, a comprehension's first value included; else the
--       launcher's call: positional, or NAME=<number or module constant>) when that value is
--       one number, so the kernel compiles on its own. notes: what changed.
--       problem: why the kernel cannot work without the dropped code (a constexpr that only
--       @triton.heuristics gives a value), for the model; nil when none.
-- A reader of top-level statements by indentation, brackets and triple-quoted strings, not a
-- Python parser.
local textsplit = require "kevo.textsplit"

local M = {}

-- Statements at column 0 of code: {first = line index, lines = {...}}.
local function statements(lines)
  local out, cur = {}, nil
  local triple, depth, cont = nil, 0, false
  for idx, line in ipairs(lines) do
    local starts = not triple and depth == 0 and not cont and line:find("^%S") and
      not line:find("^[%)%]}]") and
      not line:find("^else%f[^%w_]") and not line:find("^elif%f[^%w_]") and
      not line:find("^except%f[^%w_]") and not line:find("^finally%f[^%w_]")
    -- a def after its decorators continues the decorated statement
    if starts and cur and cur.decorated and not cur.has_def then starts = false end
    if starts or not cur then
      cur = {first = idx, lines = {}}
      out[#out + 1] = cur
    end
    cur.lines[#cur.lines + 1] = line
    if line:find("^@") and #cur.lines == 1 then cur.decorated = true end
    if line:find("^def%s") or line:find("^async%s+def%s") then cur.has_def = true end
    -- track strings and brackets through the line
    local i, n = 1, #line
    while i <= n do
      if triple then
        local e = line:find(triple, i, true)
        if not e then break end
        i, triple = e + 3, nil
      else
        local ch = line:sub(i, i)
        local three = line:sub(i, i + 2)
        if ch == "#" then
          break
        elseif three == '"""' or three == "'''" then
          triple, i = three, i + 3
        elseif ch == '"' or ch == "'" then
          local j = i + 1
          while j <= n and line:sub(j, j) ~= ch do
            j = j + (line:sub(j, j) == "\\" and 2 or 1)
          end
          i = j + 1
        else
          if ch == "(" or ch == "[" or ch == "{" then
            depth = depth + 1
          elseif ch == ")" or ch == "]" or ch == "}" then
            depth = math.max(0, depth - 1)
          end
          i = i + 1
        end
      end
    end
    cont = not triple and line:find("\\$") ~= nil
  end
  return out
end

local function allowed_import(text)
  local from = text:match("^from%s+([%w_%.]+)%s+import")
  if from then return from == "math" or from == "triton" or from:find("^triton%.") ~= nil end
  local list = text:match("^import%s+([^\n#]+)")
  if not list then return false end
  for part in list:gmatch("[^,]+") do
    local mod = part:match("^%s*([%w_%.]+)")
    if not (mod == "math" or mod == "triton" or (mod and mod:find("^triton%."))) then
      return false
    end
  end
  return true
end

local function is_constant(rhs)
  rhs = rhs:gsub("%s+$", "")
  return rhs:find("^%-?[%d%.][%w%.]*$") or rhs:find("^[rRuU]?[\"']") or
    rhs == "True" or rhs == "False" or rhs == "None" or
    rhs:find("^tl%.constexpr%(%s*%-?[%d%.][%w%.]*%s*%)$") ~= nil
end

-- {NAME = "value"} from the first triton.Config({...}) in text; a value that a comprehension's
-- loop variable gives (for bm in [64, 128]) is the loop's first.
local function first_config(text)
  local dict = text:match("triton%.Config%s*%(%s*(%b{})")
  local out = {}
  if dict then
    for k, v in dict:gmatch("[\"']([%w_]+)[\"']%s*:%s*([%w_%.%-]+)") do
      if not v:find("^%-?[%d%.]+$") then
        v = text:match("for%s+" .. v:gsub("%W", "%%%0") .. "%s+in%s*[%[%(]%s*(%-?%d+)")
      end
      out[k] = v
    end
  end
  return out
end

-- Gives defaults to a kernel's constexpr parameters that lack one; returns the new def text
-- and the names given.
local function lift_constexprs(def, config, dropped_text, consts)
  local open = def:find("(", 1, true)
  local params = open and def:match("^%b()", open)
  if not params then return def, {} end
  local list, given = {}, {}
  for p in params:sub(2, -2):gmatch("[^,]+") do
    if p:find("%S") then list[#list + 1] = p end
  end
  -- the launcher's positional arguments: kernel[grid](a, b, 1024)
  local kname = def:match("^def%s+([%w_]+)")
  local call = kname and dropped_text:match("%f[%w_]" .. kname .. "%s*%b[]%s*(%b())")
  local positional = {}
  if call then
    for _, a in ipairs(textsplit.top(call:sub(2, -2), ",", "([{")) do
      if a:find("^%s*[%w_]+%s*=") then break end -- keywords from here on
      positional[#positional + 1] = a:match("^%s*(.-)%s*$")
    end
  end
  local function number(v)
    if v and v:find("^%-?%d+$") then return v end
    return v and consts[v] or nil
  end
  local need_default = false
  for i, p in ipairs(list) do
    local name = p:match("^%s*([%w_]+)%s*:%s*tl%.constexpr%s*$")
    if name then
      local v = config[name] or number(positional[i])
      if not v then
        local seen = {}
        for val in dropped_text:gmatch("[%(,%s]" .. name .. "%s*=%s*([%w_%-]+)%f[^%w_%.]") do
          val = number(val)
          if val then seen[val] = true end
        end
        local only, count = nil, 0
        for val in pairs(seen) do only, count = val, count + 1 end
        if count == 1 then v = only end
      end
      if v then
        list[i] = p:gsub("%s*$", "") .. " = " .. v
        given[#given + 1] = name .. "=" .. v
        need_default = true
      elseif need_default then
        return def, {} -- a parameter without a default after one with: leave it as written
      end
    elseif need_default and not p:find("=") then
      return def, {}
    end
  end
  if #given == 0 then return def, {} end
  local new_params = "(" .. table.concat(list, ",") .. ")"
  return def:sub(1, open - 1) .. new_params .. def:sub(open + #params), given
end

function M.kernel_only(code)
  assert(type(code) == "string", "extract.triton.kernel_only: code must be a string")
  local lines = {}
  for line in (code .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  if lines[#lines] == "" then lines[#lines] = nil end
  local stmts = statements(lines)
  local dropped, dropped_text, config, consts = {}, {}, {}, {}
  for _, s in ipairs(stmts) do
    local first = s.lines[1]
    local text = table.concat(s.lines, "\n")
    if s.decorated then
      local jit = false
      for _, l in ipairs(s.lines) do
        if l:find("^@triton%.jit%s*$") or l:find("^@triton%.jit%s*#") or
           l:find("^@triton%.jit%s*%(") then
          jit = true
        end
      end
      if jit then
        s.kernel = true
        for k, v in pairs(first_config(text)) do config[k] = v end
        local h = text:match("@triton%.heuristics%s*%(%s*(%b{})")
        for k in (h or ""):gmatch("[\"']([%w_]+)[\"']%s*:") do
          s.heuristics = s.heuristics or {}
          s.heuristics[#s.heuristics + 1] = k
        end
      else
        s.drop = "decorated " .. (text:match("\ndef%s+([%w_]+)") or "function")
      end
    elseif first:find("^#") or not first:find("%S") or first:find("^[rRuUbBfF]*[\"']") then
      s.keep = true
    elseif first:find("^import%s") or first:find("^from%s") then
      if not allowed_import(first) then s.drop = first:gsub("%s+$", "") end
    elseif first:find("^def%s") or first:find("^async%s") then
      s.drop = "def " .. (first:match("def%s+([%w_]+)") or "?")
    elseif first:find("^class%s") then
      s.drop = "class " .. (first:match("class%s+([%w_]+)") or "?")
    else
      local name, rhs = text:match("^([%w_]+)%s*=%s*(.*)$")
      if not name then -- an annotated constant, BLOCK: tl.constexpr = 1024
        name, rhs = text:match("^([%w_]+)%s*:%s*[%w_%.]+%s*=%s*(.*)$")
      end
      if not (name and (name == "KEVO_LAUNCH" or is_constant(rhs))) then
        s.drop = (first:match("^[%w_%.]+") or "statement") .. " (line " .. s.first .. ")"
      elseif rhs:find("^%-?%d+%s*$") then
        consts[name] = rhs:match("^(%-?%d+)")
      end
    end
    if s.drop then dropped[#dropped + 1] = s.drop; dropped_text[#dropped_text + 1] = text end
  end
  local all_dropped = table.concat(dropped_text, "\n")
  local out, notes, lifted, removed_decorators = {}, {}, {}, false
  local problems, jit_args = {}, false
  for _, s in ipairs(stmts) do
    if s.drop then
      local trailing = {}
      for i = #s.lines, 2, -1 do
        if s.lines[i]:find("%S") then break end
        trailing[#trailing + 1] = ""
      end
      out[#out + 1] = "# kevo: dropped " .. s.drop .. " (kevo compiles the kernels only and "
        .. "launches them itself)"
      for _, t in ipairs(trailing) do out[#out + 1] = t end
    elseif s.kernel then
      local kept, def = {}, nil
      for i, l in ipairs(s.lines) do
        if l:find("^def%s") then
          def = table.concat(s.lines, "\n", i)
          break
        elseif l:find("^@triton%.jit%s*%(") then -- @triton.jit(...): the server takes it bare
          kept[#kept + 1] = "@triton.jit"
          jit_args = true
        elseif l:find("^@triton%.jit") then
          kept[#kept + 1] = l
        elseif l:find("^@") or #kept == 0 then
          removed_decorators = true -- another decorator, or its continuation lines
        end
      end
      for _, k in ipairs(s.heuristics or {}) do
        local has_default = (def or ""):find("[%(,]%s*" .. k .. "%s*:%s*tl%.constexpr%s*=")
        if not has_default then
          problems[#problems + 1] = "@triton.heuristics gives " .. k .. " of " ..
            ((def or ""):match("^def%s+([%w_]+)") or "the kernel") .. " its value at each call, " ..
            "and kevo compiles the kernel once for every shape, without the decorator: give " ..
            k .. " a default that is right on every shape (such as the masked path), or compute " ..
            "the condition inside the kernel"
        end
      end
      local given
      def, given = lift_constexprs(def or "", config, all_dropped, consts)
      for _, g in ipairs(given) do lifted[#lifted + 1] = g end
      out[#out + 1] = table.concat(kept, "\n")
      out[#out + 1] = def
    else
      out[#out + 1] = table.concat(s.lines, "\n")
    end
  end
  if #dropped > 0 then notes[#notes + 1] = "dropped host code: " .. table.concat(dropped, ", ") end
  if jit_args then notes[#notes + 1] = "dropped @triton.jit's arguments (kevo compiles a bare "
    .. "@triton.jit)" end
  if removed_decorators then
    notes[#notes + 1] = "kept @triton.jit only (kevo tunes knobs itself)"
  end
  if #lifted > 0 then
    notes[#notes + 1] = "constexpr defaults taken from the dropped code: " ..
      table.concat(lifted, ", ")
  end
  local problem = #problems > 0 and table.concat(problems, "; ") or nil
  if #notes == 0 then return code, notes, problem end
  return table.concat(out, "\n") .. "\n", notes, problem
end

return M
