-- kevo.extract.reply: what wraps the code in a reply, taken off before kevo.extract reads it.
--
--   local rp = require "kevo.extract.reply"
--   rp.strip_thinking(text) -> text2, skipped_lines
--       A reasoning section (<think>...</think>, <thinking>, <reasoning>) holds drafts and
--       fragments, often with a fence left open, that are not the answer: the text after the last
--       closing tag, when it holds anything (skipped_lines: how many lines went; 0: none).
--   rp.json_blocks(text, line) -> {block, ...}
--       A reply (or a ```json block) that is a JSON object with the code in a string: a block for
--       each string value holding a kernel (__global__ or @triton.jit), its launch from a string
--       whose key names a launch ({"code": "...", "launch": "return {kernels = ...}"}).
--   rp.file_name(block) -> name | nil
--       The file a block says it is: title="x.cuh" or a file name in its info string, a first
--       line `// x.cuh` or `// File: x.cuh`, or a file name on the prose line above the fence.
--   rp.inline_headers(code, files, self) -> code2, {name, ...}
--       Each #include "name" whose file is another block of the reply (files: name -> block)
--       replaced by that block's code (#pragma once dropped): kevo compiles one file.
--   rp.apply_diff(src, diff) -> src2 | nil, why
--       A unified diff's @@ hunks applied to src by their context and removed lines (trailing
--       blanks ignored), in order.
local M = {}

--   rp.html_fences(text) -> text2
--       <pre><code class="language-cuda">...</code></pre> (a reply rendered as HTML) as fences;
--       the entities inside are restored with the block's other code.
--   rp.plain_chars(code) -> code2 | nil
--       Typographic quotes, non-breaking and zero-width spaces (a chat front end's, invalid in
--       code) as plain ASCII; nil when there are none.
local CLOSE_TAGS = {"</think>", "</thinking>", "</reasoning>"}

function M.html_fences(text)
  if not text:find("<pre", 1, true) or text:find("```", 1, true) then return text end
  text = text:gsub("<pre[^>]*>%s*<code([^>]*)>", function(attrs)
    local lang = attrs:match("language%-([%w_+#-]+)") or attrs:match("lang%-([%w_+#-]+)") or ""
    return "\n```" .. lang .. "\n"
  end)
  return (text:gsub("</code>%s*</pre>", "\n```\n"))
end

local PLAIN = {["\u{201C}"] = '"', ["\u{201D}"] = '"', ["\u{2018}"] = "'", ["\u{2019}"] = "'",
               ["\u{00A0}"] = " ", ["\u{200B}"] = "", ["\u{FEFF}"] = "", ["\u{2212}"] = "-"}

function M.plain_chars(code)
  local changed = false
  -- single curly quotes are apostrophes in comments unless double ones say a front end was here
  local curly = code:find("\u{201C}", 1, true) or code:find("\u{201D}", 1, true)
  for from, to in pairs(PLAIN) do
    if code:find(from, 1, true) and (curly or to ~= "'") then
      code = code:gsub(from, to)
      changed = true
    end
  end
  return changed and code or nil
end

function M.strip_thinking(text)
  local last
  for _, tag in ipairs(CLOSE_TAGS) do
    local i = 1
    while true do
      local _, e = text:find(tag, i, true)
      if not e then break end
      if not last or e > last then last = e end
      i = e + 1
    end
  end
  if not last or not text:find("%S", last + 1) then return text, 0 end
  local _, skipped = text:sub(1, last):gsub("\n", "")
  return text:sub(last + 1), skipped
end

local ESCAPES = {n = "\n", t = "\t", r = "\r", b = "\b", f = "\f", ['"'] = '"', ["\\"] = "\\",
                 ["/"] = "/"}

-- The strings of a JSON text in order, decoded: {{key =, value =}, ...} (key: the object key
-- the string is the value of, or nil). A reader of strings only, tolerant of what is around them.
local function json_strings(text)
  local out, i, n, key = {}, 1, #text, nil
  while i <= n do
    local a = text:find('"', i, true)
    if not a then break end
    local j, buf = a + 1, {}
    while j <= n do
      local ch = text:sub(j, j)
      if ch == "\\" then
        local e = text:sub(j + 1, j + 1)
        if e == "u" then
          local code = tonumber(text:sub(j + 2, j + 5), 16)
          buf[#buf + 1] = code and utf8.char(code) or "?"
          j = j + 6
        else
          buf[#buf + 1] = ESCAPES[e] or e
          j = j + 2
        end
      elseif ch == '"' then
        break
      else
        buf[#buf + 1] = ch
        j = j + 1
      end
    end
    local str = table.concat(buf)
    if text:match("^%s*:", j + 1) then
      key = str
    else
      out[#out + 1] = {key = key, value = str}
      key = nil
    end
    i = j + 1
  end
  return out
end

function M.json_blocks(text, line)
  if not text:find("^%s*[%[{]") then return {} end
  local strings, code, launch = json_strings(text), {}, nil
  for _, s in ipairs(strings) do
    local v = s.value
    if v:find("__global__", 1, true) or v:find("@triton.jit", 1, true) then
      code[#code + 1] = s
    elseif s.key and s.key:lower():find("launch", 1, true) and v:find("kernels", 1, true) then
      launch = v
    end
  end
  local out = {}
  for _, s in ipairs(code) do
    out[#out + 1] = {code = s.value, closed = true, line = line or 1, json_launch = launch,
                     json = true,
                     notes = {"took the code from the JSON string '" .. tostring(s.key) .. "'"}}
  end
  return out
end

local FILE = "([%w_%-%.]+%.%a%a?%a?)"
local SOURCE_EXT = {h = true, hh = true, hpp = true, hxx = true, cuh = true, inl = true,
                    cu = true, cpp = true, cc = true, py = true}

local function is_file(name)
  local ext = name and name:match("%.(%a+)$")
  return ext and SOURCE_EXT[ext:lower()] and name or nil
end

function M.file_name(b)
  local info = b.info or ""
  local name = info:match("title%s*=%s*[\"']([^\"']+)[\"']") or
    info:match("file%s*=%s*[\"']([^\"']+)[\"']") or info:match("filename%s*=%s*[\"']([^\"']+)[\"']")
    or is_file(info:match("^[%w+#]*[:%s]%s*" .. FILE .. "%s*$"))
  local first = b.code:match("^%s*([^\n]*)")
  name = name or is_file(first:match("^//%s*[Ff]ile:?%s*" .. FILE)) or
    is_file(first:match("^//%s*" .. FILE .. "%s*$")) or
    is_file(first:match("^/%*%s*" .. FILE .. "%s*%*/"))
  if not name and b.before then
    for token in b.before:gmatch(FILE) do
      if is_file(token) then
        name = token
        break
      end
    end
  end
  return name and name:match("([^/]+)$")
end

function M.inline_headers(code, files, self)
  local used = {}
  local function expand(src, depth)
    return (src:gsub('([ \t]*#[ \t]*include[ \t]*"([^"\n]+)"[^\n]*)', function(_, name)
      local f = files[name:match("([^/]+)$")]
      if not f or f == self or used[name] or depth > 8 then return nil end
      used[name] = true
      used[#used + 1] = name
      local body = f.code:gsub("[ \t]*#[ \t]*pragma[ \t]+once[^\n]*\n?", "")
      return "/* kevo: " .. name .. " inlined from the reply */\n" .. expand(body, depth + 1)
    end))
  end
  local out = expand(code, 1)
  local names = {}
  for i = 1, #used do names[i] = used[i] end
  return out, names
end

local function split_lines(text)
  local lines = {}
  for l in (text .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  return lines
end

local function rstrip(s) return (s:gsub("%s+$", "")) end

function M.apply_diff(src, diff)
  local hunks, cur = {}, nil
  for _, line in ipairs(split_lines(diff)) do
    if line:find("^@@") then
      cur = {old = {}, new = {}}
      hunks[#hunks + 1] = cur
    elseif cur then
      local mark, rest = line:sub(1, 1), line:sub(2)
      if mark == " " or line == "" then
        cur.old[#cur.old + 1] = rest
        cur.new[#cur.new + 1] = rest
      elseif mark == "-" and not line:find("^%-%-%- ") then
        cur.old[#cur.old + 1] = rest
      elseif mark == "+" and not line:find("^%+%+%+ ") then
        cur.new[#cur.new + 1] = rest
      elseif mark ~= "\\" then -- past the hunk ("\ No newline at end of file" is in it)
        cur = nil
      end
    end
  end
  if #hunks == 0 then return nil, "it has no @@ hunk" end
  local lines, pos = split_lines(src), 1
  if lines[#lines] == "" then lines[#lines] = nil end
  for k, h in ipairs(hunks) do
    while #h.old > 0 and h.old[#h.old] == "" and h.new[#h.new] == "" do
      h.old[#h.old], h.new[#h.new] = nil, nil -- a trailing blank context line
    end
    local at
    for i = pos, #lines - #h.old + 1 do
      local same = true
      for j = 1, #h.old do
        if rstrip(lines[i + j - 1]) ~= rstrip(h.old[j]) then
          same = false
          break
        end
      end
      if same then
        at = i
        break
      end
    end
    if not at then
      return nil, "hunk " .. k .. "'s context and removed lines are not in the code"
    end
    local merged = {}
    for i = 1, at - 1 do merged[#merged + 1] = lines[i] end
    for _, l in ipairs(h.new) do merged[#merged + 1] = l end
    for i = at + #h.old, #lines do merged[#merged + 1] = lines[i] end
    lines, pos = merged, at + #h.new
  end
  return table.concat(lines, "\n") .. "\n"
end

return M
