-- ev:plans resolves a candidate's launch chunk at every shape exactly as an evaluation does,
-- with no GPU and no worker: the source's own knob defaults apply, Triton blocks may be left
-- to num_warps, and a source without a launch block is an expected failure.
local evaluator = require "kevo.evaluator"
local src = assert(os.getenv("KEVO_SRC"), "KEVO_SRC is not set (run under ctest)")
local function read(p) local f = assert(io.open(p, "rb")) local s =
  f:read("a") f:close() return s end

local ev = assert(evaluator.new{recipe = src .. "/recipes/softmax.yaml"})
local cu = read(src .. "/recipes/softmax/rowwise.cu")
local plans = assert(ev:plans{lang = "cuda", source = cu, knobs = {BLOCK = 512}})
assert(#plans == 4, "one plan per shape")
assert(plans[1].label == "M=16384,N=8192" and plans[2].label == "M=127,N=1000")
for _, p in ipairs(plans) do
  local k = p.plan.kernels[1]
  assert(k.name == "softmax" and k.block[1] == 512 and #k.args == 4, "knob given: BLOCK = 512")
end
assert(plans[2].plan.kernels[1].grid[1] == 127 and plans[2].plan.kernels[1].args[3].i32 == 127)

-- no knobs given: the source's #ifndef default is what the chunk sees, as in an evaluation
local defaults = assert(ev:plans{lang = "cuda", source = cu})
local default_block = tonumber(cu:match("#ifndef BLOCK%s+#define BLOCK (%d+)"))
assert(defaults[1].plan.kernels[1].block[1] == default_block, "the source's default BLOCK")

-- a Triton seed: resolved from its kevo:launch string with num_warps' default
local py = read(src .. "/recipes/softmax/softmax.py")
local tp = assert(ev:plans{lang = "triton", source = py})
assert(tp[1].plan.kernels[1].grid[1] == 16384)
-- Triton's compile options that can make no kernel are named as such, before the chunk runs
-- (num_warps = 0 would otherwise surface as a block of 0 threads, or reach the compiler)
for _, bad in ipairs{{num_warps = 0}, {num_warps = 3}, {num_warps = 64}, {num_warps = -2},
                     {num_warps = "four"}, {num_stages = 0}, {num_stages = 9}} do
  local name, value = next(bad)
  local none, why, code = ev:plans{lang = "triton", source = py, knobs = bad}
  assert(none == nil and code == "E_ARG" and why:find("knob " .. name, 1, true) and
         why:find("got '" .. value .. "'", 1, true), why)
  local r = ev:evaluate{lang = "triton", source = py, knobs = bad}
  assert(r.verdict == "launch_error" and r.stage == "compile" and
         r.message:find(name .. " must be", 1, true), r.message)
end
assert(ev:plans{lang = "triton", source = py, knobs = {num_warps = 32, num_stages = 8}})

-- no launch block: nil, message, E_LAUNCH; misuse raises
local ok, msg, code = ev:plans{lang = "cuda", source = "__global__ void k() {}"}
assert(ok == nil and code == "E_LAUNCH" and msg:find("kevo:launch"), msg)
assert(not pcall(ev.plans, ev, {lang = "cuda", source = cu, bogus = 1}))
-- many tensors, as a KernelBench model's parameters and buffers are (MobileNetV2 has 316,
-- 0-d i64 buffers among them): all resolve; more than the worker takes: an error naming the
-- limit, not a silent drop
local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir))
local function write(p, s) local f = assert(io.open(p, "wb")) f:write(s) f:close() end
local function many_recipe(n, nargs)
  local inputs, args = {}, {}
  for i = 1, n do
    inputs[#inputs + 1] = i % 3 == 0
      and ("  t%d: {dtype: i64, shape: [], init: \"randint(0, 1)\"}"):format(i)
      or ("  t%d: {dtype: f32, shape: [N], init: normal}"):format(i)
    if i <= nargs then args[#args + 1] = ('"t%d"'):format(i) end
  end
  local launch = (
    "/* kevo:launch\nreturn {kernels = {{name = 'k', grid = {1}, block = {1}, args = {%s, "
    .. "'y'}}}}\n*/\n")
    :format(table.concat(args, ", "))
  write(dir .. "/many.cu", launch .. 'extern "C" __global__ void k() {}\n')
  write(dir .. "/many.yaml", table.concat({"kevo: 1", "name: many", "summary: Many tensors.",
    "params: {N: 4}", "inputs:", table.concat(inputs, "\n"), "outputs:",
    "  y: {dtype: f32, shape: [N]}", "reference: {lang: cuda, file: many.cu, kernel: k}", ""},
    "\n"))
  return assert(evaluator.new{recipe = dir .. "/many.yaml"})
end
local many = many_recipe(400, 400)
local mp = assert(many:plans{lang = "cuda", source = read(dir .. "/many.cu")})
assert(#mp[1].plan.kernels[1].args == 401, #mp[1].plan.kernels[1].args)
many:close()
many = many_recipe(4096, 8)
ok, msg, code = many:plans{lang = "cuda", source = read(dir .. "/many.cu")}
assert(ok == nil and code == "E_RECIPE" and msg:find("4097 tensors") and msg:find("at most 4096"),
  msg)
many:close()
os.execute("rm -rf " .. dir)
print("plans ok")
