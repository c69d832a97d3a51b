-- kevo.extract: code out of a model's reply.
--
--   extract.blocks(text)          -> {{lang=, tag=, code=, closed=, line=}, ...} every fenced block
--   extract.launch(source)        -> the launch chunk inside a source (kevo:launch block) or nil
--   extract.candidates(reply, {unterminated=false})
--       -> {{lang="cuda"|"triton", source=, launch=, launch_from="inline"|"block"|"earlier", line=,
--            notes={...}}, ..., skipped = {{line=, reason=}, ...}}
--        | nil, msg, "E_PARSE"   (the reply was cut by the token limit, or holds no code)
--       A candidate's `problem`, when set, says why it cannot work as kevo compiles it.
--   extract.best(reply, lang) -> the candidate kevo evaluates | nil, feedback, "E_PARSE"
--       lang: the language asked for. Prefers that language, then a candidate with a launch,
--       then one that defines a kernel; among equals the last (a reply's final version). The
--       feedback says what was wrong and what an answer must look like, for the next prompt;
--       a best candidate with a problem, or followed by a diff that does not apply, gives
--       feedback too.
-- `reply` is a reply from kevo.llm (a table with text and truncated) or plain text. A reply cut
-- by the token limit yields no candidate at all: half a kernel must never be compiled.
--
-- Replies as models write them: code in fences or, with no fence at all, the stretch from the
-- first line of code to the last; a ```python block is Triton when it has @triton.jit, and CUDA
-- when its strings hold a __global__ kernel (torch's load_inline, cupy); other Python (a usage
-- example) is no candidate. What wraps the code (a reasoning section, HTML, JSON, a diff, a
-- header block of the reply) is taken off first (kevo.extract.reply); host code around a kernel
-- is dropped (kevo.extract.cuda, kevo.extract.triton); a candidate's `notes` say what changed.
local cuda_src = require "kevo.extract.cuda"
local triton_src = require "kevo.extract.triton"
local reply_src = require "kevo.extract.reply"

local M = {}

local LANGS = {
  cuda = "cuda", cu = "cuda", cuh = "cuda",
  cpp = "cpp", ["c++"] = "cpp", cxx = "cpp", cc = "cpp", hpp = "cpp",
  c = "c", h = "c",
  python = "python", py = "python", python3 = "python", triton = "python",
  lua = "lua",
  json = "json", diff = "diff", patch = "diff", udiff = "diff",
}

local function looks_python(code)
  return code:find("@triton.jit", 1, true) or code:find("^%s*import%s") or
    code:find("\nimport%s") or code:find("^%s*from%s+[%w_%.]+%s+import%s") or
    code:find("\nfrom%s+[%w_%.]+%s+import%s") or code:find("load_inline", 1, true)
end

-- A language for a block without a tag, from what it holds (nil when unclear).
local function looks_diff(code)
  return (code:find("^@@ %-%d") or code:find("\n@@ %-%d")) and
    (code:find("^%-%-%- ") or code:find("\n%-%-%- ") or code:find("\n[%-+]")) and true or false
end

local function guess(code)
  if looks_diff(code) then return "diff" end
  if looks_python(code) then return "python" end
  if code:find("__global__", 1, true) or code:find('extern "C"', 1, true) then return "cuda" end
  if code:find("^%s*return%s*{") and code:find("kernels", 1, true) then return "lua" end
  return nil
end

-- Code that a chat front end HTML-escaped (&lt; &gt; &amp; &quot;), restored; nil when none is.
local ENTITIES = {lt = "<", gt = ">", amp = "&", quot = '"', apos = "'", ["#39"] = "'",
                  ["#x27"] = "'", ["#34"] = '"', nbsp = " "}
local function unescape_html(code)
  if not (code:find("&[lg]t;") or code:find("&amp;") or code:find("&quot;")) then return nil end
  return (code:gsub("&(#?[%w]+);", function(e) return ENTITIES[e] end))
end

-- Whether code has lines only C starts with (#include, __global__, extern "C" at a line's start).
local function c_lines(code)
  for _, p in ipairs({"#%s*include%s*[<\"]", "__global__%s", 'extern%s+"C"'}) do
    if code:find("^%s*" .. p) or code:find("\n%s*" .. p) then return true end
  end
  return false
end

function M.blocks(text)
  assert(type(text) == "string", "extract.blocks: text must be a string")
  local blocks, open = {}, nil
  local lineno, before = 0, nil
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    lineno = lineno + 1
    line = line:gsub("\r$", "")
    if open then
      local indent, fence = line:match("^( *)([`~]+)%s*$")
      if fence and #indent <= open.indent + 3 and fence:sub(1, 1) == open.char and
         #fence >= open.len then
        open.block.code = table.concat(open.lines, "\n")
        open.block.closed = true
        blocks[#blocks + 1] = open.block
        open = nil
      else -- a fence indented in a list item: its lines lose that indent
        local lead = line:match("^ *")
        open.lines[#open.lines + 1] = line:sub(math.min(#lead, open.indent) + 1)
      end
    else
      local indent, fence, info = line:match("^( *)(```+)%s*(.-)%s*$")
      if not fence then indent, fence, info = line:match("^( *)(~~~+)%s*(.-)%s*$") end
      if fence and not info:find("`", 1, true) then
        local tag = info:match("^([^%s{]+)") or ""
        tag = tag:lower()
        open = {char = fence:sub(1, 1), len = #fence, lines = {}, indent = #indent,
                block = {tag = tag ~= "" and tag or nil, lang = LANGS[tag], line = lineno,
                         info = info, before = before}}
      elseif line:find("%S") then
        before = line
      end
    end
  end
  if open then -- an unterminated fence runs to the end of the reply; it is marked
    open.block.code = table.concat(open.lines, "\n")
    open.block.closed = false
    blocks[#blocks + 1] = open.block
  end
  -- a whole answer wrapped in a ```markdown block: the blocks inside it
  local flat = {}
  for _, b in ipairs(blocks) do
    local wrapper = (b.tag == nil or b.tag == "markdown" or b.tag == "md") and b.closed and
      (b.code:find("^%s*```+%s*[%w+]") or b.code:find("\n%s*```+%s*[%w+]"))
    if wrapper then
      for _, inner in ipairs(M.blocks(b.code)) do
        inner.line = inner.line + b.line
        flat[#flat + 1] = inner
      end
    else
      flat[#flat + 1] = b
    end
  end
  blocks = flat
  for _, b in ipairs(blocks) do
    local plain = unescape_html(b.code)
    if plain then b.code, b.html = plain, true end
    plain = reply_src.plain_chars(b.code)
    if plain then b.code, b.typographic = plain, true end
    if not b.lang then
      b.lang = guess(b.code) -- untagged, or a tag such as text
    elseif b.lang ~= "python" and (b.code:find("@triton.jit", 1, true) or
                                   b.code:find("load_inline", 1, true)) and
           (b.code:find("^%s*import%s") or b.code:find("\nimport%s")) then
      b.lang, b.retagged = "python", b.tag -- Triton or a ModelNew in a ```cuda fence
    elseif b.lang == "python" and not looks_python(b.code) and c_lines(b.code) then
      b.lang, b.retagged = "cuda", b.tag -- CUDA C in a ```python fence
    end
  end
  return blocks
end

-- The launch chunk in comment lines: a `PREFIX kevo:launch` line, then PREFIX lines.
local function launch_in_comment_lines(source, prefix)
  local lines, inside = {}, false
  for line in (source .. "\n"):gmatch("([^\n]*)\n") do
    if inside then
      local body = line:match("^%s*" .. prefix .. " ?(.*)$")
      if not body then break end
      lines[#lines + 1] = body
    elseif line:match("^%s*" .. prefix .. "%s*kevo:launch%s*$") then
      inside = true
    end
  end
  if inside and #lines > 0 then return table.concat(lines, "\n") .. "\n" end
  return nil
end

-- The text of a launch chunk inside a source: a /* kevo:launch ... */ comment or `// kevo:launch`
-- followed by `//` comment lines (CUDA C), a '''kevo:launch ... ''' or """kevo:launch ... """
-- string, or `# kevo:launch` followed by `#` comment lines (Python).
function M.launch(source)
  -- the chunk may start on the marker's line (/* kevo:launch return {...} */, as the prompt
  -- writes it); a doc comment (/** ... **/) is a comment too
  local chunk = source:match("/%*+%s*kevo:launch[ \t]*\n?(.-)%*+/")
  if chunk then return chunk end
  chunk = source:match("'''%s*kevo:launch[ \t]*\n?(.-)'''") or
          source:match('"""%s*kevo:launch[ \t]*\n?(.-)"""')
  if chunk then return chunk end
  return launch_in_comment_lines(source, "#") or launch_in_comment_lines(source, "//")
end

-- A reply with no fence: the stretch from its first line of code to its last, as one block
-- (none when it holds no kernel).
local CODE_START = {
  cuda = {"^%s*#%s*include", "^%s*#%s*define", "^%s*#%s*pragma", "^%s*extern%s", "^%s*__global__",
          "^%s*__device__", "^%s*template%s*<", "^%s*/%*", "^%s*//", "^%s*typedef%s",
          "^%s*struct%s", "^%s*constexpr%s", "^%s*static%s", "^%s*using%s", "^%s*namespace%s"},
  python = {"^import%s", "^from%s+[%w_%.]+%s+import", "^@triton", "^[\"']+kevo:launch",
            "^#%s*kevo:launch"},
}
local CODE_END = {
  cuda = {"^%s*}", "%*/%s*$", ";%s*$", "^%s*#", "{%s*$"},
  python = {"^%s+%S", "^[%w_]+%s*=", "^import%s", "^from%s", "^@", "^def%s", "^[\"']+%s*$",
            "^#"},
}

local function unfenced(text)
  local lang = text:find("@triton.jit", 1, true) and "python" or
    (text:find("__global__", 1, true) and "cuda")
  if not lang then return {} end
  -- a Python program whose strings hold the CUDA (KernelBench's ModelNew with no fence)
  if lang == "cuda" and (text:find("load_inline", 1, true) or text:find("RawKernel", 1, true))
     and (text:find("^import%s") or text:find("\nimport%s")) then
    lang = "python"
  end
  local lines = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = (line:gsub("\r$", "")) end
  local function matches(line, pats)
    for _, p in ipairs(pats) do
      if line:find(p) then return true end
    end
    return false
  end
  local first, last
  for i, line in ipairs(lines) do
    if not first and matches(line, CODE_START[lang]) then first = i end
    if first and matches(line, CODE_END[lang]) then last = i end
  end
  if not (first and last) then return {} end
  -- a line of prose between pieces of code ("And the launch:") becomes a comment
  local kept, commented, in_comment = {}, 0, false
  for i = first, last do
    local line = lines[i]
    local prose = not in_comment and line:find("^%s*%u%l*[%s,]+%l+%s+%S") and
      not line:find("[;{}%(%)%[%]=#_\\]") and not line:find("^%s*%u+%s") and
      not line:find("^%s*[%u_]+$")
    if prose then
      kept[#kept + 1] = (lang == "python" and "# " or "// ") .. line
      commented = commented + 1
    else
      kept[#kept + 1] = line
    end
    if lang == "cuda" then -- whether a /* comment is open at the end of the line
      local tail = line:gsub("//.*$", "")
      for mark in tail:gmatch("[/%*][%*/]") do
        if mark == "/*" then in_comment = true elseif mark == "*/" then in_comment = false end
      end
    else -- or a triple-quoted string
      for _ in line:gmatch("[\"'][\"'][\"']") do in_comment = not in_comment end
    end
  end
  local code = table.concat(kept, "\n")
  local plain = unescape_html(code)
  return {{lang = lang, code = plain or code, closed = true, line = first, unfenced = true,
           prose = commented, html = plain ~= nil}}
end

-- The candidate a code block makes, or nil and why it makes none. files: the reply's blocks
-- by the file name each says it is (for #include "name").
local function candidate_of(b, files)
  local code, lang, notes = b.code, b.lang == "python" and "triton" or "cuda", {}
  if b.lang == "python" and not code:find("@triton.jit", 1, true) then
    local inner, py_notes = cuda_src.from_python(code)
    if not inner then
      return nil, "a Python block without a kernel (no @triton.jit, no CUDA source)"
    end
    lang = "cuda"
    notes[#notes + 1] = "took the CUDA source from the Python block's strings"
    for _, n in ipairs(py_notes) do notes[#notes + 1] = n end
    local launch = M.launch(code) -- a kevo:launch string beside the CUDA source
    code = inner
    if launch and not M.launch(code) then b.python_launch = launch end
  end
  local more, problem
  if lang == "cuda" then
    local inlined
    code, inlined = reply_src.inline_headers(code, files or {}, b)
    if #inlined > 0 then
      notes[#notes + 1] = "inlined the reply's own " .. table.concat(inlined, ", ") ..
        " (kevo compiles one file)"
    end
    code, more = cuda_src.device_only(code)
  else
    code, more, problem = triton_src.kernel_only(code)
  end
  for _, n in ipairs(more) do notes[#notes + 1] = n end
  if b.unfenced then table.insert(notes, 1, "took the code from a reply without a code fence") end
  if b.prose and b.prose > 0 then
    notes[#notes + 1] = "made " .. b.prose .. " line(s) of prose between the code into comments"
  end
  if b.html then notes[#notes + 1] = "restored HTML-escaped characters (&lt; &gt; &amp; &quot;)" end
  if b.retagged then
    notes[#notes + 1] = "read the ```" .. b.retagged .. " block as " .. b.lang .. " (what it holds)"
  end
  if b.typographic then
    notes[#notes + 1] = "replaced typographic quotes, non-breaking and zero-width spaces"
  end
  for _, n in ipairs(b.notes or {}) do notes[#notes + 1] = n end
  local c = {lang = lang, source = code, line = b.line, closed = b.closed, notes = notes,
             problem = problem}
  c.launch = M.launch(code) or b.python_launch or b.json_launch
  if c.launch then c.launch_from = "inline" end
  return c
end

local function is_launch_block(b)
  return b.lang == "lua" and b.code:find("kernels", 1, true) ~= nil
end

local function has_kernel(c)
  if c.lang == "triton" then return c.source:find("@triton.jit", 1, true) ~= nil end
  return c.source:find("__global__", 1, true) ~= nil
end

-- The nearest candidate before out[i] in its language for which pred holds, or nil.
local function nearest_before(out, i, pred)
  for j = i - 1, 1, -1 do
    if out[j].lang == out[i].lang and pred(out[j]) then return out[j] end
  end
  return nil
end

-- A launch that came with code defining no kernel (a block of its own in the kernel's language,
-- or a ```lua block after a host wrapper) belongs to the kernel before it that has none.
local function move_stray_launches(out)
  for i, c in ipairs(out) do
    if c.launch and not has_kernel(c) then
      local k = nearest_before(out, i, function(e) return has_kernel(e) and not e.launch end)
      if k then
        k.launch, k.launch_from, c.launch = c.launch, "block", nil
        k.notes[#k.notes + 1] = "took the launch from the block at line " .. c.line
      end
    end
  end
end

-- Whether candidate c defines kernel `name`.
local function defines(c, name)
  local n = name:gsub("%W", "%%%0")
  if c.lang == "triton" then return c.source:find("\ndef%s+" .. n .. "%s*%(") ~= nil end
  return c.source:find("%f[%w_]" .. n .. "%s*%(") ~= nil and has_kernel(c)
end

-- A revision written without its launch ("same launch as before") takes the launch of the
-- candidate before it when that launch names only kernels the revision defines.
local function inherit_launches(out)
  for i, c in ipairs(out) do
    local e = not c.launch and has_kernel(c) and
              nearest_before(out, i, function(x) return x.launch ~= nil end)
    if e then
      local names, all = 0, true
      for name in e.launch:gmatch("name%s*=%s*[\"']([%w_]+)[\"']") do
        names = names + 1
        all = all and defines(c, name)
      end
      if names > 0 and all then
        c.launch, c.launch_from = e.launch, "earlier"
        c.notes[#c.notes + 1] = "took the launch of the block at line " .. e.line ..
          " (this one has none and defines the kernels it names)"
      end
    end
  end
end

-- A kernel that calls helpers (__device__ functions, Triton jit functions) written in an earlier
-- block of the reply ("first, the helpers: ...; now the kernel: ...") gets that block put before
-- it: kevo compiles one file.
local HELPER = {cuda = "__device__[^;{(]-([%w_]+)%s*%(", triton = "\n%s*def%s+([%w_]+)%s*%("}

local function join_helper_blocks(out)
  for i, c in ipairs(out) do
    if has_kernel(c) then
      local joined = {}
      for j = 1, i - 1 do
        local h = out[j]
        -- CUDA: a block of helpers only; Triton (helpers are @triton.jit too): one without a
        -- launch that defines nothing the kernel's block defines again
        local helpers = h.lang == c.lang and
          (c.lang == "cuda" and not has_kernel(h) or c.lang == "triton" and not h.launch)
        if helpers and c.lang == "triton" then
          for name in ("\n" .. h.source):gmatch(HELPER.triton) do
            if defines(c, name) then helpers = false end
          end
        end
        for name in helpers and ("\n" .. h.source):gmatch(HELPER[c.lang]) or function() end do
          local n = name:gsub("%W", "%%%0")
          local own = c.lang == "cuda" and c.source:find("__device__[^;{(]-%f[%w_]" .. n .. "%s*%(")
          if c.source:find("%f[%w_]" .. n .. "%s*%(") and not own then
            joined[#joined + 1] = h
            break
          end
        end
      end
      if #joined > 0 then
        local parts, lines = {}, {}
        for _, h in ipairs(joined) do
          parts[#parts + 1] = h.source
          lines[#lines + 1] = tostring(h.line)
        end
        local own = c.source
        if c.lang == "triton" then -- the sandbox binds a name once: the helpers' imports serve
          local seen = {}
          for line in table.concat(parts, "\n"):gmatch("[^\n]+") do
            if line:find("^import%s") or line:find("^from%s") then seen[line] = true end
          end
          own = own:gsub("[^\n]+\n?", function(line)
            if seen[(line:gsub("\n$", ""))] then return "" end
          end)
        end
        parts[#parts + 1] = own
        c.source = table.concat(parts, "\n\n")
        c.notes[#c.notes + 1] = "put the helpers of the block(s) at line " ..
          table.concat(lines, ", ") .. " before the kernel (kevo compiles one file)"
      end
    end
  end
end

-- ```json blocks replaced by the code their strings hold.
local function expand_json(blocks)
  local out = {}
  for _, b in ipairs(blocks) do
    if b.lang == "json" and b.closed then
      for _, j in ipairs(reply_src.json_blocks(b.code, b.line)) do out[#out + 1] = j end
    else
      out[#out + 1] = b
    end
  end
  for _, b in ipairs(out) do
    if b.json then b.lang = guess(b.code) or "cuda" end
  end
  return out
end

-- The code blocks of a reply's answer (what wraps it taken off: kevo.extract.reply), the blocks
-- by the file name each says it is, and how many lines of reasoning came before the answer.
local function reply_blocks(text)
  local answer, thought = reply_src.strip_thinking(text)
  answer = reply_src.html_fences(answer)
  local blocks = M.blocks(answer)
  if #blocks == 0 then blocks = reply_src.json_blocks(answer) end
  if #blocks == 0 then blocks = unfenced(answer) end
  blocks = expand_json(blocks)
  local files = {}
  for _, b in ipairs(blocks) do
    b.line = b.line + thought
    if b.closed and b.code then
      local name = reply_src.file_name(b)
      if name then files[name] = b end
    end
  end
  return blocks, files, thought
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
  local blocks, files, thought = reply_blocks(text)
  local last_code -- the last block that made a candidate, as written (a diff applies to it)
  -- a diff block: the block before it with the diff applied, or nil (and why, in skipped)
  local function patch(d)
    local patched, why = nil, "only a diff, with no whole source to apply it to,"
    if last_code then patched, why = reply_src.apply_diff(last_code.code, d.code) end
    if patched then
      return {lang = last_code.lang, tag = last_code.tag, code = patched, closed = true,
              line = d.line, notes = {"applied the diff at line " .. d.line ..
                                      " to the block at line " .. last_code.line}}
    end
    if last_code then
      why = "a diff that does not apply to the block at line " .. last_code.line .. " (" .. why
        .. ")"
    end
    skipped[#skipped + 1] = {line = d.line, reason = why, diff = true}
    return nil
  end
  for _, b in ipairs(blocks) do
    if not b.closed and not opts.unterminated then
      skipped[#skipped + 1] = {line = b.line, reason = "unterminated code fence"}
    else
      if b.lang == "diff" then b = patch(b) end
      if b and (b.lang == "cuda" or b.lang == "cpp" or b.lang == "c" or b.lang == "python") then
        local c, why = candidate_of(b, files)
        if c then
          if not c.launch and waiting then -- a launch block written before its kernel
            c.launch, c.launch_from, waiting = waiting, "block", nil
          end
          if thought > 0 then
            table.insert(c.notes, 1, "skipped the reasoning section (" .. thought .. " lines)")
          end
          out[#out + 1] = c
          last_code = b
        else
          skipped[#skipped + 1] = {line = b.line, reason = why}
        end
      elseif b and is_launch_block(b) then
        local last = out[#out]
        if last and not last.launch then
          last.launch, last.launch_from = b.code, "block"
        else
          waiting = b.code
        end
      end
    end
  end
  if #out == 0 then
    local why = #skipped > 0 and skipped[1].reason or "no code block"
    if #skipped > 0 and why == "unterminated code fence" then
      why = "only an unterminated code fence"
    end
    return nil, "E_PARSE: " .. why .. " in the reply", "E_PARSE"
  end
  move_stray_launches(out)
  inherit_launches(out)
  join_helper_blocks(out)
  out.skipped = skipped
  return out
end

-- How an answer must look, said after a reply kevo could not use.
local FORMAT = {
  cuda = "Answer with the whole source in one ```cuda block: kernels declared extern \"C\" "
    .. "__global__, no host code (kevo launches the kernels), and the launch in a /* kevo:launch "
    .. "return {kernels = {...}} */ comment inside the block.",
  triton = "Answer with the whole module in one ```python block: the @triton.jit kernel(s), "
    .. "imports of triton and math only, and the launch in a '\'\'kevo:launch return {kernels = "
    .. "{...}} '\'\' string.",
}


function M.best(reply, lang)
  if lang ~= "cuda" and lang ~= "triton" then
    error("extract.best: lang must be 'cuda' or 'triton'", 2)
  end
  local cands, msg = M.candidates(reply)
  if not cands then
    local hint = FORMAT[lang]
    if msg:find("token limit", 1, true) then
      hint = "Your reply was cut by the token limit before it ended: answer again with the whole "
        .. "source, with less explanation around it. " .. hint
    end
    return nil, msg .. "\n" .. hint, "E_PARSE"
  end
  local best, best_score
  for _, c in ipairs(cands) do
    local score = (c.lang == lang and 4 or 0) + (c.launch and 2 or 0) + (has_kernel(c) and 1 or 0)
    if not best or score >= best_score then best, best_score = c, score end
  end
  if best.problem then
    return nil, "E_PARSE: " .. best.problem .. ".\n" .. FORMAT[lang], "E_PARSE"
  end
  for _, sk in ipairs(cands.skipped) do -- a later diff that failed: the code before it is stale
    if sk.diff and sk.line > best.line then
      return nil, "E_PARSE: the reply ends with " .. sk.reason .. " at line " .. sk.line ..
        ", so kevo cannot tell which code you meant.\nSend the whole changed source instead of "
        .. "a diff. " .. FORMAT[lang], "E_PARSE"
    end
  end
  return best
end

return M
