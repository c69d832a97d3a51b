-- Helper of bench/compile_latency.sh (run by `kevo script`). Modes:
--   cold FILE          the first compile of this process (NVRTC's start-up included), no cache
--   warm FILE REPS     median of REPS compiles after one untimed, no cache
--   hit FILE REPS      first compile through the cache (disk hit when the cache dir holds it),
--                      then the median of REPS memory hits
--   nvcc FILE REPS     median wall time of `nvcc -cubin` subprocesses of the same file
--   many JOBS FILE...  compile_many of 4 distinct variants of each file, no cache
-- Prints one line: "key value ..." for the shell script to collect.
local cuda = require "kevo.cuda"
local kevo = require "kevo"

local mode = arg[1]

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

local function median(xs)
  table.sort(xs)
  local n = #xs
  return n % 2 == 1 and xs[(n + 1) // 2] or (xs[n // 2] + xs[n // 2 + 1]) / 2
end

local function timed_compile(src, opts)
  local t = kevo.clock()
  local m, info = cuda.compile(src, opts)
  local ms = (kevo.clock() - t) * 1e3
  assert(m, info)
  m:close()
  return ms, info
end

if mode == "cold" then
  local ms = timed_compile(read(arg[2]), {cache = false})
  print(string.format("cold %.1f", ms))
elseif mode == "warm" then
  local src, reps = read(arg[2]), tonumber(arg[3])
  timed_compile(src, {cache = false})
  local xs = {}
  for i = 1, reps do xs[i] = timed_compile(src, {cache = false}) end
  print(string.format("warm %.1f min %.1f", median(xs), xs[1]))
elseif mode == "hit" then
  local src, reps = read(arg[2]), tonumber(arg[3])
  local first, info = timed_compile(src, {})
  local xs = {}
  for i = 1, reps do
    local ms, again = timed_compile(src, {})
    assert(again.cached)
    xs[i] = ms
  end
  print(string.format("first %.2f cached %s mem %.3f", first, tostring(info.cached), median(xs)))
elseif mode == "nvcc" then
  local file, reps = arg[2], tonumber(arg[3])
  local out = os.tmpname()
  local cmd = string.format("nvcc -cubin -arch=sm_90 -std=c++17 -o '%s' '%s' >/dev/null 2>&1",
    out, file)
  assert(os.execute(cmd), "nvcc failed on " .. file)
  local xs = {}
  for i = 1, reps do
    local t = kevo.clock()
    assert(os.execute(cmd))
    xs[i] = (kevo.clock() - t) * 1e3
  end
  os.remove(out)
  print(string.format("nvcc %.1f", median(xs)))
elseif mode == "many" then
  local items = {}
  for i = 3, #arg do
    local src = read(arg[i])
    for v = 1, 4 do items[#items + 1] = {source = src .. "\n// variant " .. v .. "\n"} end
  end
  local t = kevo.clock()
  local res = cuda.compile_many(items, {cache = false})
  local ms = (kevo.clock() - t) * 1e3
  for _, r in ipairs(res) do assert(r.module, r.error); r.module:close() end
  print(string.format("many %d %.1f %.1f", #items, ms, ms / #items))
else
  error("usage: kevo script compile_latency.lua cold|warm|hit|nvcc|many ...")
end
