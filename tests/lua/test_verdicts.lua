-- One vocabulary of verdicts: kevo.verdict (the C table in proto.c) is the list; the C and Lua
-- sources judge with no other name, and docs/architecture.md lists the same ones.
local verdict = require "kevo.verdict"
local src = assert(os.getenv("KEVO_SRC"), "KEVO_SRC is not set (run under ctest)")
local function read(p) local f = assert(io.open(p, "rb")) local s =
  f:read("a") f:close() return s end

local known = {}
for i, v in ipairs(verdict.list) do
  assert(not known[v], "verdict listed twice: " .. v)
  known[v] = i
  assert(type(verdict.meaning[v]) == "string" and #verdict.meaning[v] > 0, v)
end
assert(verdict.list[1] == "ok" and #verdict.list == 13, "ok and twelve others")

-- the docs' list, from the Evaluation result block: verdict = "ok"|"compile_error"|...
local arch = read(src .. "/docs/architecture.md")
local block = assert(arch:match('verdict = ("ok".-), *\n *stage ='), "the docs' verdict list")
local docs = {}
for v in block:gmatch('"([%w_]+)"') do docs[#docs + 1] = v end
table.sort(docs)
local ours = {table.unpack(verdict.list)}
table.sort(ours)
assert(table.concat(docs, " ") == table.concat(ours, " "),
  "docs/architecture.md lists " .. table.concat(docs, " "))

-- every verdict the sources write or compare
local patterns = {
  c = {'wk_fail%(e, ([^,]*),', 'set_verdict%(res, ([^,]*),', 'pverdict = ([^;]*);',
       'strcmp%(%w*%-?>?verdict, ("[%w_]+")', '"verdict", ("[%w_]+")',
       'const char %*bad = ([^;]*);'},
  lua = {'verdict [=~]= ("[%w_]+")', 'FATAL_VERDICT = (%b{})'},
}
local function files(dir, ext)
  local out = {}
  local p = assert(io.popen(("find '%s' -name '*.%s'"):format(dir, ext)))
  for f in p:lines() do out[#out + 1] = f end
  p:close()
  return out
end
local seen, uses = {}, 0
local function scan(list, pats)
  for _, f in ipairs(list) do
    local n = 0
    for line in io.lines(f) do
      n = n + 1
      for _, pat in ipairs(pats) do
        for arg in line:gmatch(pat) do
          for v in arg:gmatch('"([%w_]+)"') do
            assert(known[v], ("%s:%d: verdict %q is not in kevo.verdict"):format(f, n, v))
            seen[v], uses = true, uses + 1
          end
        end
      end
    end
  end
end
local c = files(src .. "/runtime", "c")
scan(c, patterns.c)
local lua = files(src .. "/lua", "lua")
for _, f in ipairs(files(src .. "/strategies", "lua")) do lua[#lua + 1] = f end
scan(lua, patterns.lua)
assert(uses >= 30, "the patterns found only " .. uses .. " uses: they no longer match the code")
for _, v in ipairs(verdict.list) do
  if v ~= "ok" then assert(seen[v], "no source writes verdict " .. v) end
end
print("verdicts ok: " .. uses .. " uses")
