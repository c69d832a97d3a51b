-- A batch's start_by (kevo run's --time) holds against compiles already under way: an NVRTC
-- group and a Triton batch begun before it get what is left of it and no more. Their candidates
-- come back not_evaluated (saying so), never compile errors, and nothing of them is remembered:
-- the same candidate with time to spare compiles again. The batch returns within a moment of
-- start_by, not when its compiles would have ended. No GPU: real NVRTC and Triton, the stand-in
-- worker (tests/integration/fake_worker.py).
local evaluator = require "kevo.evaluator"
local kevo = require "kevo"

local src = assert(os.getenv("KEVO_SRC"), "KEVO_SRC is not set (run under ctest)")
local fake = "python3 " .. src .. "/tests/integration/fake_worker.py ok"
local function read(p)
  local f = assert(io.open(p, "rb"))
  local s = f:read("a")
  f:close()
  return s
end
local fails = 0
local function check(cond, what)
  if not cond then
    fails = fails + 1
    io.stderr:write("FAIL: ", what, "\n")
  end
end

local ev <close> = assert(evaluator.new{recipe = src .. "/recipes/softmax.yaml", worker = fake,
                                        deadline_s = 30})
local cu = read(src .. "/recipes/softmax/rowwise.cu")
local good = {source = cu, knobs = {BLOCK = 256, VEC = 4}, name = "rowwise.cu"}
check(ev:evaluate(good).ok, "the softmax seed is judged ok")

-- every source below is new to the compile caches (a cached module would be served at once)
local nonce = ("\n// %d %.9f\n"):format(os.time(), kevo.clock())

-- 2^D distinct inlined instantiations: NVRTC takes seconds (D = 11: 5 to 20 s here, 80 s for
-- D = 12), most of it where it cannot be cancelled; a batch of two such and the good one
local function slow_cuda(offset)
  return cu .. ([[

template <int D, int O> struct Slow {
  static __device__ __forceinline__ float f(float a, const float *y) {
    return Slow<D - 1, 2 * O>::f(a, y) * 1.0001f + Slow<D - 1, 2 * O + 1>::f(a, y);
  }
};
template <int O> struct Slow<0, O> {
  static __device__ __forceinline__ float f(float a, const float *y) { return a + y[O %% 97]; }
};
__global__ void slow(float *y) { y[1] = Slow<11, %d>::f(y[0], y); }
]]):format(offset) .. nonce
end
local batch = {{source = slow_cuda(0), knobs = {BLOCK = 256, VEC = 4}, name = "slow0.cu"},
               {source = slow_cuda(1), knobs = {BLOCK = 256, VEC = 4}, name = "slow1.cu"},
               good}
local t0 = kevo.clock()
local got = ev:evaluate_many(batch, {start_by = t0 + 1})
local took = kevo.clock() - t0
check(took < 2, ("the NVRTC batch returned %.1f s after its start, start_by 1 s"):format(took))
for i = 1, 2 do
  check(got[i].verdict == "not_evaluated" and got[i].compile == nil,
        "slow CUDA " .. i .. ": " .. tostring(got[i].verdict) .. " " .. tostring(got[i].message))
  check(tostring(got[i].message):find("ran out while it was being compiled", 1, true),
        "slow CUDA " .. i .. "'s message: " .. tostring(got[i].message))
end
check(got[3].verdict == "not_evaluated", "the good one, compiled in the same group, is not judged")
-- a compile not yet begun when start_by has passed is not begun at all
t0 = kevo.clock()
got = ev:evaluate_many({batch[1]}, {start_by = t0 - 1})
check(got[1].verdict == "not_evaluated" and kevo.clock() - t0 < 0.5, "past start_by: no compile")

-- Triton: a kernel whose static_range unrolls 10^8 stores; the servers are warm (the seed)
local py = read(src .. "/recipes/softmax/softmax.py")
local tri = {lang = "triton", source = py, knobs = {BLOCK = 1024}, name = "softmax.py"}
local warm = ev:evaluate(tri)
if warm.verdict == "no_gpu" or (warm.message or ""):find("Triton", 1, true) and not warm.ok then
  io.stderr:write("note: Triton is not available here (", tostring(warm.message),
                  "): its part is skipped\n")
else
  check(warm.ok, "the Triton seed is judged ok: " .. tostring(warm.message))
  local slow_py = py:gsub("def softmax%(x_ptr, y_ptr, M, N, BLOCK: tl.constexpr%):\n",
                          "%0    for i in tl.static_range(100000000):\n" ..
                          "        tl.store(y_ptr + i, 1.0)\n", 1) .. nonce:gsub("//", "#")
  check(slow_py ~= py, "the slow Triton source was made")
  local slow_tri = {lang = "triton", source = slow_py, knobs = {BLOCK = 1024}, name = "slow.py"}
  t0 = kevo.clock()
  got = ev:evaluate_many({slow_tri, slow_tri, tri}, {start_by = t0 + 2})
  took = kevo.clock() - t0
  check(took < 3, ("the Triton batch returned %.1f s after its start, start_by 2 s"):format(took))
  for i = 1, 2 do
    check(got[i].verdict == "not_evaluated" and
          tostring(got[i].message):find("ran out while it was being compiled", 1, true),
          "slow Triton " .. i .. ": " .. tostring(got[i].verdict) .. " " ..
          tostring(got[i].message))
  end
  -- the cut compile left nothing behind: the pool compiles and the seed is judged again
  check(ev:evaluate(tri).ok, "after the cut, the Triton seed is judged ok")
end
check(ev:evaluate(good).ok, "after the cut, the CUDA seed is judged ok")
if fails > 0 then error(fails .. " check(s) failed") end
print("compile deadline: ok")
