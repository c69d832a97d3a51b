-- kevo.prompt: messages for kernel work carry the task, the contract, the best candidate and
-- the feedback of the last evaluation.
local prompt = require "kevo.prompt"

local task = {
  name = "softmax", summary = "Row-wise softmax.", params = {M = 4096, N = 1024},
  shapes = {{M = 127, N = 1000}}, inputs = {x = {dtype = "f32", shape = {"M", "N"}}},
  outputs = {y = {dtype = "f32", shape = {"M", "N"}}}, cost = {bytes = "2*M*N*4", flops = "5*M*N"},
  prompt = "Keep rows in registers.",
}
local result = {
  ok = false, verdict = "wrong", stage = "verify", message = "3 mismatches",
  compile = {kernels = {{name = "k", registers = 40, shared_static = 0, local_bytes = 0,
                         spill_stores = 2, spill_loads = 3}},
             diagnostics = {{line = 7, col = 3, severity = "warning", message = "unused x"}}},
  verify = {mismatches = 3, worst = {shape = "M=127,N=1000", tensor = "y", index = {5, 999},
                                     expected = 0.25, actual = 0.5, abs_err = 0.25, rel_err = 1}},
  bench = {median_ms = 0.125, p10_ms = 0.12, p90_ms = 0.13, ref_median_ms = 0.25, speedup = 2,
           roofline_pct = 61.5, gbps = 2000, tflops = 0.5},
  feedback = "row 5 is wrong at the tail",
}

local msgs =
  prompt.messages{task = task, best = {source = "__global__ void k() {}", result = result}}
assert(#msgs == 2 and msgs[1].role == "system" and msgs[2].role == "user")
assert(msgs[1].content:find('extern "C"', 1, true) and msgs[1].content:find("kevo:launch", 1, true))
local u = msgs[2].content
for _, want in ipairs{"Operator: softmax", "Row-wise softmax.", "input  x: f32 [M, N]",
                      "output y: f32 [M, N]", "M=4096, N=1024", "{M=127, N=1000}",
                      "Keep rows in registers.", "```cuda", "__global__ void k()",
                      "line 7:3 warning: unused x", "40 registers", "spills 2 stores / 3 loads",
                      "index [5, 999]: expected 0.25, got 0.5", "speed-up 2x", "61.5%",
                      "row 5 is wrong at the tail", "faster"} do
  assert(u:find(want, 1, true), "prompt lacks: " .. want .. "\n" .. u)
end

local f = prompt.followup{result = result}
assert(f:find("Fix the problem", 1, true) and f:find("Result: wrong at stage verify", 1, true))
f = prompt.followup{result = {ok = true, verdict = "ok", stage = "done", bench = {median_ms = 1}}}
assert(f:find("faster", 1, true))
assert(prompt.system{lang = "triton"}:find("@triton.jit", 1, true))
-- the launch form the prompt asks for is the one every path reads, kevo eval's C reader too
-- (it refuses `# kevo:launch` comment lines; kevo.extract takes them from replies that use them)
assert(prompt.system{lang = "triton"}:find("'''kevo:launch", 1, true))
assert(not prompt.system{lang = "triton"}:find("# kevo:launch", 1, true))
assert(prompt.feedback(nil) == "(no evaluation result)")
-- a long compile log is clipped, not pasted whole
local long = prompt.feedback{verdict = "compile_error", stage = "compile",
                             compile = {log = string.rep("x", 10000)}}
assert(#long < 5000 and long:find("more bytes", 1, true))
-- an imported problem: the PyTorch reference is the specification; unknown flops are not "?"
local torch_task =
  {name = "relu", params = {n = 8}, inputs = {{name = "x", dtype = "f32", shape = {"n"}}},
                    outputs = {{name = "out", dtype = "f32", shape = {"n"}}}, cost = {bytes = 64},
                    reference = {lang = "torch", file = "relu/problem.py",
                                 source =
                                   "class Model(nn.Module):\n    def forward(self, x):\n        "
                                   .. "return torch.relu(x)\n\n"}}
u = prompt.messages{task = torch_task}[2].content
for _, want in ipairs{"Specification: the reference is this PyTorch problem",
                      "```python\nclass Model(nn.Module):", "return torch.relu(x)\n```",
                      "64 bytes moved\n", "Write a correct, fast kernel"} do
  assert(u:find(want, 1, true), "prompt lacks: " .. want .. "\n" .. u)
end
assert(not u:find("? flops", 1, true) and not u:find("```cuda", 1, true))
assert(not prompt.task(task):find("Specification", 1, true),
  "a recipe without a torch reference has none")
print("prompt ok")
