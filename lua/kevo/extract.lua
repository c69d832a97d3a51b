-- kevo.extract: code out of a model's reply.
--
--   extract.blocks(text)          -> {{lang=, tag=, code=, closed=, line=}, ...} every fenced block
--   extract.launch(source)        -> the launch chunk inside a source (kevo:launch block) or nil
--   extract.candidates(reply, {unterminated=false})
--       -> {{lang="cuda"|"triton", source=, launch=, launch_from="inline"|"block", line=}, ...}
--        | nil, msg, "E_PARSE"   (the reply was cut by the token limit, or holds no code)
-- `reply` is a reply from kevo.llm (a table with text and truncated) or plain text. A reply cut
-- by the token limit yields no candidate at all: half a kernel must never be compiled.
local M = {}

local LANGS = {
  cuda = "cuda", cu = "cuda", cuh = "cuda",
  cpp = "cpp", ["c++"] = "cpp", cxx = "cpp", cc = "cpp", hpp = "cpp",
  c = "c", h = "c",
  python = "python", py = "python", python3 = "python", triton = "python",
  lua = "lua",
}

-- A language for a block without a tag, from what it holds (nil when unclear).
local function guess(code)
  if code:find("__global__", 1, true) or code:find('extern "C"', 1, true) then return "cuda" end
  if code:find("@triton.jit", 1, true) or code:find("import triton", 1, true) then
    return "python"
  end
  if code:find("^%s*return%s*{") and code:find("kernels", 1, true) then return "lua" end
  return nil
end

function M.blocks(text)
  assert(type(text) == "string", "extract.blocks: text must be a string")
  local blocks, open = {}, nil
  local lineno = 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    lineno = lineno + 1
    line = line:gsub("\r$", "")
    if open then
      local indent, fence = line:match("^( *)([`~]+)%s*$")
      if fence and #indent <= 3 and fence:sub(1, 1) == open.char and #fence >= open.len then
        open.block.code = table.concat(open.lines, "\n")
        open.block.closed = true
        blocks[#blocks + 1] = open.block
        open = nil
      else
        open.lines[#open.lines + 1] = line
      end
    else
      local indent, fence, info = line:match("^( *)(```+)%s*(.-)%s*$")
      if not fence then indent, fence, info = line:match("^( *)(~~~+)%s*(.-)%s*$") end
      if fence and #indent <= 3 and not info:find("`", 1, true) then
        local tag = info:match("^([^%s{]+)") or ""
        tag = tag:lower()
        open = {char = fence:sub(1, 1), len = #fence, lines = {},
                block = {tag = tag ~= "" and tag or nil, lang = LANGS[tag], line = lineno}}
      end
    end
  end
  if open then -- an unterminated fence runs to the end of the reply; it is marked
    open.block.code = table.concat(open.lines, "\n")
    open.block.closed = false
    blocks[#blocks + 1] = open.block
  end
  for _, b in ipairs(blocks) do
    if not b.tag then b.lang = guess(b.code) end
  end
  return blocks
end

-- The text of a launch chunk inside a source: a /* kevo:launch ... */ comment (CUDA C), a
-- '''kevo:launch ... ''' or """kevo:launch ... """ string, or `# kevo:launch` followed by
-- `#` comment lines (Python).
function M.launch(source)
  local chunk = source:match("/%*%s*kevo:launch[ \t]*\n(.-)%*/")
  if chunk then return chunk end
  chunk = source:match("'''%s*kevo:launch[ \t]*\n(.-)'''") or
          source:match('"""%s*kevo:launch[ \t]*\n(.-)"""')
  if chunk then return chunk end
  local lines, inside = {}, false
  for line in (source .. "\n"):gmatch("([^\n]*)\n") do
    if inside then
      local body = line:match("^%s*#%s?(.*)$")
      if not body then break end
      lines[#lines + 1] = body
    elseif line:match("^%s*#%s*kevo:launch%s*$") then
      inside = true
    end
  end
  if inside and #lines > 0 then return table.concat(lines, "\n") .. "\n" end
  return nil
end

local function is_launch_block(b)
  return b.lang == "lua" and b.code:find("kernels", 1, true) ~= nil
end

function M.candidates(reply, opts)
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "unterminated" then error("extract.candidates: unknown option '" .. k .. "'", 2) end
  end
  local text = reply
  if type(reply) == "table" then
    if reply.truncated or reply.finish == "length" then
      return nil, "E_PARSE: the reply was cut by the token limit (finish=length); its code is "
        .. "not compiled", "E_PARSE"
    end
    text = reply.text
  end
  if type(text) ~= "string" then error("extract.candidates: reply must be a reply or text", 2) end
  local out, skipped, waiting = {}, {}, nil
  for _, b in ipairs(M.blocks(text)) do
    if not b.closed and not opts.unterminated then
      skipped[#skipped + 1] = {line = b.line, reason = "unterminated code fence"}
    elseif b.lang == "cuda" or b.lang == "cpp" or b.lang == "c" or b.lang == "python" then
      local lang = b.lang == "python" and "triton" or "cuda"
      local c = {lang = lang, source = b.code, line = b.line, closed = b.closed}
      c.launch = M.launch(b.code)
      if c.launch then
        c.launch_from = "inline"
      elseif waiting then -- a launch block written before its kernel
        c.launch, c.launch_from, waiting = waiting, "block", nil
      end
      out[#out + 1] = c
    elseif is_launch_block(b) then
      local last = out[#out]
      if last and not last.launch then
        last.launch, last.launch_from = b.code, "block"
      else
        waiting = b.code
      end
    end
  end
  if #out == 0 then
    local why = #skipped > 0 and "only an unterminated code fence" or "no code block"
    return nil, "E_PARSE: " .. why .. " in the reply", "E_PARSE"
  end
  out.skipped = skipped
  return out
end

return M
