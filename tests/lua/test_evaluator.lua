-- kevo.evaluator end to end without a GPU: real NVRTC, the real softmax recipe, and a stand-in
-- worker process (tests/integration/fake_worker.py) that speaks the real protocol and checks the
-- request's shape. Covers result shaping, feedback, batches, and every way a worker fails.
local evaluator = require "kevo.evaluator"
local kevo = require "kevo"

local src = assert(os.getenv("KEVO_SRC"), "KEVO_SRC is not set (run under ctest)")
local recipe = src .. "/recipes/softmax.yaml"
local fake = "python3 " .. src .. "/tests/integration/fake_worker.py "
local tmp = os.tmpname()
os.remove(tmp)
local fails = 0
local function check(cond, what)
  if not cond then
    fails = fails + 1
    io.stderr:write("FAIL: ", what, "\n", debug.traceback(), "\n")
  end
end
local function has(text, needle, what)
  check(type(text) == "string" and text:find(needle, 1, true), (what or "text") .. " lacks '" ..
        needle .. "' in: " .. tostring(text))
end

local ev <close> = assert(evaluator.new{recipe = recipe, worker = fake .. "ok", deadline_s = 30})
has(tostring(ev), "kevo.evaluator.Evaluator (softmax)")
local r = ev:recipe()
check(r.name == "softmax" and r.params.M == 16384, "recipe info")
local seed = r.seeds[1]
check(seed and seed.source and seed.space.BLOCK, "seed with source and space")

-- a good candidate: compiled for real, judged by the fake worker
local res = ev:evaluate{source = seed.source, knobs = {BLOCK = 256, VEC = 4}, name = "rowwise.cu"}
check(res.ok == true and res.verdict == "ok" and res.stage == "done", "ok verdict: " .. res.message)
check(res.compile.kernels[1].name == "softmax", "kernel info from NVRTC")
check(res.compile.ms >= 0 and res.compile.arch, "compile timing")
check(res.device.name == "Fake GPU", "device in the result")
check(res.verify.shapes == 6 and res.verify.trials == 5, "every shape (4 and 2 held out), 5 trials")
check(#res.verify.held_out == 2 and res.verify.held_out[1] ~= res.verify.held_out[2],
      "two held-out shapes recorded")
check(res.verify.seed == "secret", "the inputs' seed is the worker's secret")
check(math.abs(res.bench.speedup - 1) < 1e-9, "speed-up")
has(res.feedback, "Correct: 5 trials over 6 shapes", "feedback")
has(res.feedback, "speed-up 1x", "feedback")
has(res.feedback, "Kernel softmax:", "feedback")
local d = assert(ev:device())
check(d.sms == 132, "device()")

-- the same kernel built again comes from the compile cache
local again = ev:evaluate{source = seed.source, knobs = {VEC = 4, BLOCK = 256}, name = "rowwise.cu"}
check(again.compile.cached == true, "second compile is cached")

-- bench = false stops after verify
local nb = ev:evaluate{source = seed.source, bench = false}
check(nb.ok and nb.bench == nil and nb.stage == "verify", "bench=false")

-- a compile error: diagnostics with the source line
local broken = "/* line 1 */\n" .. [[
/* kevo:launch
return {kernels = {{name = "softmax", grid = {M}, block = {128}, args = {"x", "y", i32(M), i32(N)}}}}
*/
extern "C" __global__ void softmax(const float* x, float* y, int M, int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x
  if (i < N) y[i] = x[i];
}
]]
res = ev:evaluate{source = broken, name = "broken.cu"}
check(not res.ok and res.verdict == "compile_error" and res.stage == "compile", "compile_error")
has(res.message, "broken.cu:7:", "message")
has(res.feedback, "line 7:", "feedback")
has(res.feedback, "if (i < N) y[i] = x[i];", "feedback quotes the line")

-- a launch chunk error names the file's line
local badlaunch = [[
// a kernel whose launch chunk is wrong
/* kevo:launch
return {kernels = {{name = "copy", grid = {cdiv(M * N, BLOCKK)}, block = {128},
                    args = {"x", "y", i32(M * N)}}}}
*/
extern "C" __global__ void copy(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}
]]
res = ev:evaluate{source = badlaunch, name = "copy.cu"}
check(res.verdict == "launch_error", "launch_error: " .. res.verdict)
has(res.message, "copy.cu:3: unknown name 'BLOCKK'", "message")
has(res.feedback, "The launch description failed", "feedback")
-- an override chunk instead of the source's block, with a wrong kernel name
res = ev:evaluate{source = badlaunch, launch = "return {kernels = {{name = 'kopy', grid = {1}, " ..
                  "block = {1}, args = {}}}}", launch_name = "mine.lua", launch_line = 4}
check(res.verdict == "launch_error", "override launch_error")
has(res.message, "mine.lua:4: kevo:launch: kernel 'kopy' is not in the module (it has: copy", "msg")

-- a wrong result: the worst element reaches the feedback
local wrong = badlaunch:gsub("BLOCKK", "128"):gsub("copy", "copy_wrong")
res = ev:evaluate{source = wrong, name = "wrong.cu"}
check(res.verdict == "wrong" and res.stage == "verify" and res.verify.worst.index[2] == 1000,
  "wrong")
has(res.feedback, "Worst element: y[3, 1000] (flat index 13297) at shape M=3,N=1", "feedback")
has(res.feedback, "expected 0.25, got 0", "feedback")

-- a Triton candidate's launch chunk is resolved before it compiles (it gives the signature)
res = ev:evaluate{lang = "triton", source = "'''kevo:launch\nreturn {}\n'''\n"}
check(res.verdict == "launch_error" and res.stage == "compile", "triton verdict")
has(res.message, "candidate.py:1: kevo:launch: kernels: must be a non-empty list")

-- a batch compiles together and answers in order
local batch = {}
for i, block in ipairs{128, 256, 512} do
  batch[i] = {source = seed.source, knobs = {BLOCK = block, VEC = 2, SALT = kevo.clock()}}
end
batch[4] = {source = broken}
local results = ev:evaluate_many(batch)
check(#results == 4, "batch size")
for i = 1, 3 do check(results[i].ok, "batch " .. i .. " ok") end
check(results[4].verdict == "compile_error", "batch 4 compile_error")

-- a batch past its start_by (kevo run's --time): nothing more is started, each says why
local late = ev:evaluate_many(batch, {start_by = kevo.clock() - 1})
check(#late == 4, "late batch size")
for i = 1, 4 do
  check(late[i].verdict == "not_evaluated" and late[i].ok == false,
        "late " .. i .. " not evaluated")
  has(late[i].message, "the run's time ran out", "late " .. i .. "'s message")
  check(late[i].compile == nil, "late " .. i .. " was not compiled")
end
local early = ev:evaluate_many(batch, {start_by = kevo.clock() + 3600})
check(early[1].ok and early[4].verdict == "compile_error", "a start_by to come changes nothing")
check(not pcall(ev.evaluate_many, ev, batch, {start_at = 1}), "an unknown option raises")

-- misuse raises
check(not pcall(ev.evaluate, ev, {source = "x", frobnicate = 1}), "unknown key raises")
check(not pcall(ev.evaluate, ev, {lang = "fortran", source = "x"}), "bad lang raises")
check(not pcall(ev.evaluate, ev, {}), "no source raises")
check(not pcall(evaluator.new, {recipe = recipe, trials = 3}), "trials < 5 raises")
local ok, e, code = evaluator.new{recipe = src .. "/recipes/nonexistent.yaml"}
check(ok == nil and code == "E_IO", "missing recipe is an expected failure: " .. tostring(e))

-- worker failures become verdicts, and the evaluator goes on
local function with_worker(mode, deadline)
  return assert(evaluator.new{recipe = recipe, worker = fake .. mode .. " " .. tmp .. mode,
                              deadline_s = deadline or 30})
end
local good = {source = seed.source, bench = false}
local nogpu <close> = with_worker("nogpu")
res = nogpu:evaluate(good)
check(res.verdict == "no_gpu" and not res.ok, "no_gpu verdict")
has(res.message, "verification needs a GPU: no CUDA driver (fake)")
check(res.compile.kernels[1].name == "softmax", "no_gpu still compiles")
res = nogpu:evaluate{source = broken}
check(res.verdict == "compile_error", "no_gpu: compile errors still reported")
check(select(3, nogpu:device()) == "E_NOGPU", "device() without a GPU")

local hang <close> = with_worker("hang-once", 1)
local t0 = kevo.clock()
res = hang:evaluate(good)
check(res.verdict == "timeout" and kevo.clock() - t0 < 10, "timeout verdict")
res = hang:evaluate(good)
check(res.ok, "after a timeout the next candidate is judged by a fresh worker")
check(hang:stats().kills == 1 and hang:stats().spawns == 2, "one kill, one respawn")

-- a hang under way when a batch's start_by passes holds the run only 1.5 s past it
local hang2 <close> = assert(evaluator.new{recipe = recipe, deadline_s = 30,
                                           worker = fake .. "hang-once " .. tmp .. "hang2"})
hang2:device() -- the worker is up: the candidate starts well before start_by
t0 = kevo.clock()
local cut = hang2:evaluate_many({good}, {start_by = t0 + 1})[1]
check(cut.verdict == "not_evaluated" and kevo.clock() - t0 < 6,
      "a hang past start_by: not_evaluated in " .. (kevo.clock() - t0) .. " s, not after 30 s")
has(cut.message, "ran out while it was being judged", "the stopped candidate's message")
check(hang2:evaluate(good).ok, "the next candidate is judged by a fresh worker")

local crash <close> = with_worker("crash-once")
res = crash:evaluate(good)
check(res.verdict == "crash", "crash verdict")
has(res.feedback, "illegal memory access", "crash feedback")
res = crash:evaluate(good)
check(res.ok, "after a crash the next candidate is fine")

local die <close> = with_worker("die-once")
res = die:evaluate(good)
check(res.verdict == "crash", "a worker that dies mid-reply: crash verdict")
has(res.message, "exited with status 3")
check(die:evaluate(good).ok, "after a death the next one is fine")

local garbage <close> = with_worker("garbage-once")
res = garbage:evaluate(good)
check(res.verdict == "error", "garbage: error verdict")
has(res.message, "garbage")
check(garbage:evaluate(good).ok, "after garbage the next one is fine")

-- kevo.evaluate: the convenience form keeps one evaluator per recipe
res = kevo.evaluate{recipe = recipe, worker = fake .. "ok", source = seed.source, bench = false}
check(res.ok, "kevo.evaluate")

ev:close()
check(not pcall(ev.evaluate, ev, good), "closed evaluator raises")
os.execute("rm -f " .. tmp .. "*")
if fails > 0 then error(fails .. " checks failed") end
print("evaluator: all passed")
