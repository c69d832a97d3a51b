-- The Triton attack corpus (tests/triton_attacks/*.py), run by test_triton_attacks.sh:
--   kevo script triton_attacks.lua ATTACKS_DIR CANARY_DIR CACHE_DIR drop|keep
-- Each attack is compiled and its outcome compared with the `# expect:` line of its header:
-- `refused PATTERN` or `error PATTERN` (E_COMPILE whose message holds PATTERN), `timeout`
-- (E_TIMEOUT, by the deadline: 3 s, or `# deadline: N`). `# mode: checked` attacks meet the
-- allow-list; `# mode: unchecked` ones run with it switched off (triton.configure{allowlist =
-- false}), so their code runs and only the OS wall stands. After every attack an honest
-- candidate is compiled and must give the very cubin it gave first; the compile server must be
-- the same process at the end (nothing restarted it).
-- `keep`: as root, the server does not become nobody (the walls other than the user alone).
local triton = require "kevo.triton"
local sys = require "kevo.sys"
local dir, canary, cache, user = arg[1], arg[2], arg[3], arg[4]
local keep = user == "keep"

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end
local kevo_pid = read("/proc/self/stat"):match("^(%d+)")
local honest_src = read(os.getenv("KEVO_SRC") .. "/recipes/vector_add/vector_add.py")
local honest_n = 0
local function honest()
  honest_n = honest_n + 1 -- a comment after the kernel: a new source, the same kernel
  local m, info = triton.compile(honest_src .. "\n# honest " .. honest_n .. "\n",
    {kernel = "vector_add", signature = {"*fp32", "*fp32", "*fp32", "i32"},
     constexprs = {BLOCK = 1024}, name = "honest.py"})
  assert(m, info)
  assert(info.cached == false, "an honest compile came from the cache")
  return m:cubin()
end

local files = {}
for name in io.popen("ls " .. dir):lines() do
  if name:match("%.py$") then files[#files + 1] = name end
end
table.sort(files)

local failed, passed = 0, 0
local function report(ok, name, msg)
  if ok then passed = passed + 1 else failed = failed + 1 end
  print(("%s %s: %s"):format(ok and "ok  " or "FAIL", name, msg))
end

local function run_phase(mode)
  triton.configure{disk_cache = false, servers = 1, keep_user = keep,
                   allowlist = mode == "checked"}
  local baseline = honest()
  local zygote = assert(triton.selftest{}).zygote
  for _, name in ipairs(files) do
    local src = read(dir .. "/" .. name)
    local fmode = src:match("# mode: (%w+)")
    local expect = src:match("# expect: ([^\n]+)")
    if fmode == mode then
      src = src:gsub("@CANARY@", canary):gsub("@KEVO_PID@", kevo_pid):gsub("@CACHE@", cache)
      local kind, pattern = expect:match("^(%w+) ?(.*)$")
      local deadline = tonumber(src:match("# deadline: (%d+)")) or kind == "timeout" and 3 or 60
      local t0 = sys.clock()
      local m, msg, code = triton.compile(src, {kernel = "k", signature = {"*fp32"}, name = name,
                                               timeout = deadline})
      msg = msg or "compiled"
      local ok
      if kind == "timeout" then -- and the answer comes at the deadline, not when kevo gives up
        ok = m == nil and code == "E_TIMEOUT" and sys.clock() - t0 < deadline + 5
      else
        ok = m == nil and code == "E_COMPILE" and msg:find(pattern, 1, true) ~= nil
      end
      if msg:find("[\27\7]") then
        ok, msg = false, "control characters reached the message: " .. msg
      end
      report(ok, name, ("%s (want %s)"):format(msg, expect))
      report(honest() == baseline, name .. " then an honest candidate", "the same cubin as before")
    end
  end
  local after = assert(triton.selftest{}).zygote
  report(after == zygote, mode .. ": the compile server lived through every attack",
         ("pid %s, then %s"):format(zygote, after))
end

-- whose user the compile processes run as: nobody when kevo is root (and may drop), else kevo's
local me = tonumber(read("/proc/self/status"):match("\nUid:%s*(%d+)"))
triton.configure{disk_cache = false, servers = 1, keep_user = keep}
local uid = assert(triton.selftest{}).uid
report(uid == ((me == 0 and not keep) and 65534 or me), "the compile process's user",
       ("uid %s, kevo's %d (%s)"):format(uid, me, user))

run_phase("checked")
-- A source over the cap: refused once, at once, no server touched.
local zygote = assert(triton.selftest{}).zygote
local t0 = sys.clock()
local big = "import triton\n" .. ("# " .. ("x"):rep(1000) .. "\n"):rep(2100)
local m, msg, code = triton.compile(big, {kernel = "k", signature = {"*fp32"}})
report(m == nil and code == "E_COMPILE" and msg:find("over the", 1, true) and
  sys.clock() - t0 < 1 and
       assert(triton.selftest{}).zygote == zygote, "oversize source", tostring(msg))
run_phase("unchecked")
print(("attacks: %d ok, %d failed"):format(passed, failed))
os.exit(failed == 0 and 0 or 1)
