-- kevo.evaluator over a pool of workers (runtime/eval_pool.h, `kevo run --gpus`), without a GPU:
-- stand-in workers (tests/integration/fake_worker.py) that take a while per evaluation, so a
-- batch spread over two of them must take about half the time, come back in batch order, and
-- name the GPU that measured each result.
local evaluator = require "kevo.evaluator"
local kevo = require "kevo"

local src = assert(os.getenv("KEVO_SRC"), "KEVO_SRC is not set (run under ctest)")
local recipe = src .. "/recipes/softmax.yaml"
local tmp = os.tmpname()
os.remove(tmp)
local log = tmp .. ".log"
local function fake(env, mode)
  return "env KEVO_FAKE_LOG=" .. log .. " " .. (env or "") .. " python3 " .. src ..
         "/tests/integration/fake_worker.py " .. (mode or "ok")
end
local fails = 0
local function check(cond, what)
  if not cond then
    fails = fails + 1
    io.stderr:write("FAIL: ", what, "\n", debug.traceback(), "\n")
  end
end

-- a copy kernel under a name the fake worker reads: "wrong" gets verdict wrong, "slow" 2x time
local function kernel(name, salt)
  return ([[
/* kevo:launch
return {kernels = {{name = "%s", grid = {cdiv(M * N, 128)}, block = {128},
                    args = {"x", "y", i32(M * N)}}}}
*/
// %s
extern "C" __global__ void %s(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}
]]):format(name, salt, name)
end
local batch, want = {}, {}
for i = 1, 8 do
  local name = ({"k_ok", "k_wrong", "k_slow", "k_ok"})[(i - 1) % 4 + 1] .. i
  batch[i] = {source = kernel(name, kevo.clock()), name = name .. ".cu"}
  want[i] = name:find("wrong") and "wrong" or "ok"
end

-- the same batch on one worker and on two: same verdicts in the same order, half the time
local delay = "KEVO_FAKE_EVAL_S=0.4"
local one <close> = assert(evaluator.new{recipe = recipe, worker = fake(delay), deadline_s = 30})
local two <close> = assert(evaluator.new{recipe = recipe, worker = fake(delay), gpus = "0,1",
                                         deadline_s = 30})
check(one:stats().workers == 1 and two:stats().workers == 2, "workers in stats")
-- warm both (hello, the reference's compile) before timing
one:evaluate{source = kernel("k_warm", 1), bench = false}
two:evaluate_many{{source = kernel("k_warm", 1), bench = false},
                  {source = kernel("k_warm", 1), bench = false}}
os.remove(log)
local t0 = kevo.clock()
local r1 = one:evaluate_many(batch)
local t1 = kevo.clock()
local r2 = two:evaluate_many(batch)
local t2 = kevo.clock()
for i = 1, #batch do
  check(r1[i].verdict == want[i], "one worker: candidate " .. i .. " " .. r1[i].verdict)
  check(r2[i].verdict == want[i], "two workers: candidate " .. i .. " " .. r2[i].verdict)
  check(r1[i].ok == r2[i].ok and (r1[i].bench or {}).median_ms == (r2[i].bench or {}).median_ms,
        "two workers: result " .. i .. " in batch order")
  check(r1[i].device.gpu == nil, "one worker on the driver's GPU: no gpu named")
  check(r2[i].device.gpu == "0" or r2[i].device.gpu == "1", "result " .. i .. " names its GPU")
  check(r2[i].device.pci_bus and r2[i].device.pci_bus:find(":1" .. r2[i].device.gpu .. ":", 1,
        true), "result " .. i .. " has its GPU's PCI bus")
end
local serial, spread = t1 - t0, t2 - t1
io.write(string.format("pool: 8 evaluations, one worker %.2f s, two workers %.2f s (%.2fx)\n",
                       serial, spread, serial / spread))
check(serial >= 8 * 0.4 and spread < serial * 0.7, "two workers take about half the time")
local used = {}
for line in io.lines(log) do
  local op, gpu = line:match("^(%S+) %S+ %S+ (%S+)")
  if op == "evaluate" then used[gpu] = (used[gpu] or 0) + 1 end
end
check((used["0"] or 0) >= 2 and (used["1"] or 0) >= 2,
      "both GPUs evaluated: " .. tostring(used["0"]) .. ", " .. tostring(used["1"]))

-- "all": one worker per GPU the driver sees (the devices op)
local all <close> = assert(evaluator.new{recipe = recipe, worker = fake("KEVO_FAKE_GPUS=3"),
                                         gpus = "all"})
check(all:stats().workers == 3, "all: three fake GPUs, three workers")
-- a second pool for "all" (the next problem of a suite) asks for the GPUs no more
local function devices_asked()
  local n = 0
  for line in io.lines(log) do n = n + (line:match("^devices ") and 1 or 0) end
  return n
end
local asked = devices_asked()
local again <close> = assert(evaluator.new{recipe = recipe, worker = fake("KEVO_FAKE_GPUS=3"),
                                           gpus = "all"})
check(again:stats().workers == 3 and devices_asked() == asked,
      "all again: three workers, the GPUs not listed again")
local gpus = assert(evaluator.gpus{worker = fake("KEVO_FAKE_GPUS=3")})
check(#gpus == 3 and gpus[3].index == 2 and gpus[1].name == "Fake GPU", "evaluator.gpus")
local none, msg, code = evaluator.gpus{worker = fake(nil, "nogpu")}
check(none == nil and code == "E_NOGPU", "gpus without a GPU: " .. tostring(msg))
none, msg, code = evaluator.new{recipe = recipe, worker = fake(nil, "nogpu"), gpus = "all"}
check(none == nil and code == "E_NOGPU", "--gpus all without a GPU: " .. tostring(msg))

-- GPUs of two models are refused, naming both
local mixed <close> = assert(evaluator.new{recipe = recipe, gpus = "0,1",
                                           worker = fake("KEVO_FAKE_GPU_NAMES=1=Other")})
local dev
dev, msg, code = mixed:device()
check(dev == nil and code == "E_ARG", "mixed models: device() refuses")
check(tostring(msg):find("gpu 0 is Fake GPU (sm_90), gpu 1 is Other (sm_90)", 1, true),
      "mixed models named: " .. tostring(msg))
check(not pcall(mixed.evaluate_many, mixed, {batch[1], batch[2]}), "mixed models: evaluate raises")

-- malformed lists raise
for _, bad in ipairs{"0,,1", "0,0", "x", "", "1,"} do
  local okb, e = pcall(evaluator.new, {recipe = recipe, worker = fake(), gpus = bad})
  check(bad == "" and okb or (not okb and tostring(e):find("gpus", 1, true)),
        "gpus '" .. bad .. "': " .. tostring(e))
end

os.execute("rm -f " .. tmp .. "*")
if fails > 0 then error(fails .. " checks failed") end
print("pool: all passed")
