-- ev:plans resolves a candidate's launch chunk at every shape exactly as an evaluation does,
-- with no GPU and no worker: the source's own knob defaults apply, Triton blocks may be left
-- to num_warps, and a source without a launch block is an expected failure.
local evaluator = require "kevo.evaluator"
local src = assert(os.getenv("KEVO_SRC"), "KEVO_SRC is not set (run under ctest)")
local function read(p) local f = assert(io.open(p, "rb")) local s = f:read("a") f:close() return s end

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

-- no launch block: nil, message, E_LAUNCH; misuse raises
local ok, msg, code = ev:plans{lang = "cuda", source = "__global__ void k() {}"}
assert(ok == nil and code == "E_LAUNCH" and msg:find("kevo:launch"), msg)
assert(not pcall(ev.plans, ev, {lang = "cuda", source = cu, bogus = 1}))
print("plans ok")
