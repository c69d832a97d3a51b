-- report_fixture.lua DB: fills DB with archives for the report and export tests, written through
-- kevo.archive as a search would: run 1 is a finished softmax search (42 candidates in a tree,
-- every verdict kevo has, bench figures, LLM calls), run 2 found nothing correct. Hostile text
-- (a closing script tag, markup, quotes) sits in sources, messages and knobs on purpose.
-- Prints "run <id> best <candidate>" lines the tests read.
local archive = require "kevo.archive"
local json = require "kevo.json"
local path = assert(arg[1], "usage: report_fixture.lua DB")
local db = assert(archive.open(path))

local HOSTILE = [[</script><script>alert(1)</script>]]

local function source(block, extra)
  return ([[
// softmax over rows: one block of BLOCK threads per row %s
#include <cuda_fp16.h>
/* kevo:launch
return {
  kernels = {
    {name = "softmax_rows", grid = {M}, block = {BLOCK}, shared = 0,
     args = {"x", "y", i32(M), i32(N)}},
  },
}
*/
#ifndef BLOCK
#define BLOCK %d
#endif
extern "C" __global__ void softmax_rows(const float *x, float *y, int M, int N) {
  __shared__ float red[BLOCK];
  const float *row = x + (size_t)blockIdx.x * N;
  float *out = y + (size_t)blockIdx.x * N;
  float m = -3.402823466e38f;
  for (int i = threadIdx.x; i < N; i += BLOCK) m = fmaxf(m, row[i]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float sum = 0.f;
  for (int i = threadIdx.x; i < N; i += BLOCK) sum += __expf(row[i] - m);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  sum = red[0];
  for (int i = threadIdx.x; i < N; i += BLOCK) out[i] = __expf(row[i] - m) / sum; %s
}
]]):format(extra or "", block, extra or "")
end

local FP = {device = "NVIDIA H200", cc = {9, 0}, driver = 13000, sm_clock_mhz = 1980,
            mem_clock_mhz = 3201, temp_c = 41, kevo_commit = "abc1234"}

local function fingerprint(temp) FP.temp_c = temp; return FP end

local run = db:run_create{recipe = "softmax", recipe_path = "recipes/softmax.yaml",
                          recipe_hash = string.rep("ab", 32), strategy = "evolve",
                          config = {budget = 60, params = {M = 16384, N = 8192}, arch = "sm_90"},
                          seed = 7}
local verdicts = {"ok", "ok", "wrong", "ok", "compile_error", "ok", "timeout", "ok", "crash",
                  "ok", "nondeterministic", "ok", "implausible", "ok", "launch_error", "ok"}
local ref_ms = 1.6
local ids, best_id, best_speed = {}, nil, 0
local parent_of, speed_of = {}, {}
local t_tokens = 0
for i = 1, 42 do
  -- every third candidate comes from an LLM call that costs tokens
  if i % 3 == 1 then
    local tin, tout = 3000 + 97 * i, 800 + 13 * i
    t_tokens = t_tokens + tin + tout
    db:llm_call_add{run = run, provider = "anthropic", model = "claude-test",
                    request = '{"n":' .. i .. '}', response = '{"ok":true}', http_status = 200,
                    input_tokens = tin, output_tokens = tout, cost = (tin * 3 + tout * 15) / 1e6,
                    ms = 2000 + i}
  end
  local parent = i > 1 and ids[math.max(1, i - 1 - (i * 7) % 5)] or nil
  local block = ({64, 128, 256, 512, 1024})[i % 5 + 1]
  local verdict = i == 1 and "ok" or verdicts[i % #verdicts + 1]
  local src = source(block, i == 41 and "// best so far: " .. HOSTILE or "")
  if i == 9 then src = HOSTILE .. "\n" .. src end -- a hostile source that does not compile
  local c = db:candidate_add{run = run, parent = parent, origin = i == 1 and "seed" or
                             (i % 3 == 1 and "llm" or "tune"), lang = "cuda", source = src,
                             knobs = {BLOCK = block, note = i == 5 and HOSTILE or nil}}
  ids[i] = c
  local ok = verdict == "ok"
  local speed = ok and (0.8 + i / 12 + (i == 41 and 1.5 or 0)) or nil
  parent_of[c], speed_of[c] = parent, speed
  local ms = speed and ref_ms / speed
  local bytes = 2 * 16384 * 8192 * 4
  local result = {
    ok = ok, verdict = verdict,
    stage = ok and "done" or (verdict == "compile_error" and "compile" or "verify"),
    message = ok and
      "correct" or (i == 9 and
      HOSTILE or ("candidate %d: %s <b>bold</b> & \"quoted\""):format(i, verdict)),
    compile = {ms = 120 + i, cached = false, arch = "sm_90",
               kernels = {{name = "softmax_rows", registers = 32, shared_static = block * 4,
                           local_bytes = 0, spill_stores = 0, spill_loads = 0}}},
    verify = {trials = 5, shapes = 5, mismatches = ok and 0 or 17, stress_trials = 1,
              seed = "secret", held_out = {("M=%d,N=%d"):format(1000 + i, 8191 - i), "M=3,N=77"}},
    -- the artifact scan's warnings (docs/worker.md), one of them hostile text
    warnings = i % 4 == 1 and {"reads %globaltimer (a timer): timing-dependent code",
                               i == 41 and HOSTILE or nil} or nil,
    device = {name = "NVIDIA H200", cc = {9, 0}, copy_gbps = 4280},
  }
  if ok then
    local gbps = bytes / (ms / 1e3) / 1e9
    result.bench = {median_ms = ms, min_ms = ms * 0.98, p10_ms = ms * 0.99, p90_ms = ms * 1.02,
                    rse = 0.004, reps = 400, ref_median_ms = ref_ms, speedup = speed,
                    sm_clock_mhz = 1980, temp_c = 40 + i % 7, bytes = bytes, gbps = gbps,
                    roofline_pct = 100 * gbps / 4800, floor_ms = bytes / 4.8e12 * 1e3}
    if speed > best_speed then best_speed, best_id = speed, c end
  end
  db:eval_add{candidate = c, stage = result.stage, verdict = verdict, ok = ok, result = result,
              fingerprint = fingerprint(40 + i % 7)}
end
-- ctx:profile's journal entries (docs/profile.md): the fastest verified candidate whose parent
-- verified too, profiled with its parent (one diagnosis text hostile), and a failed profile
local prof, pspeed = nil, 0
for c, sp in pairs(speed_of) do
  if parent_of[c] and speed_of[parent_of[c]] and sp > pspeed then prof, pspeed = c, sp end
end
local function summary(dram, ms, tensor)
  return {time_ms = ms, kernels = 1, dram_pct = dram, dram_bytes = 1.07e9, l2_hit_pct = 12.5,
          sm_pct = 31.5, occupancy_pct = 88.2, theoretical_pct = 100, limiter = "none",
          registers = 32, waves = 6.2, ld_efficiency_pct = 100, tensor_pct = tensor}
end
local diag = {{kind = "dram_peak", score = 76,
               text = "memory-bound at 91% of DRAM bandwidth (1.07 GB moved): nothing left " ..
                 "to win here but moving fewer bytes"},
              {kind = "stalls", score = 25, text = "warps stall on: " .. HOSTILE}}
db:journal_append(run, "profile", json.encode{ids = {parent_of[prof], prof}, reference = true},
  json.encode{t = 1.5, profiles = {
    {ok = true, tool = "ncu", ms = 2400, candidate = summary(72.4, 0.31, 0),
     reference = summary(60.1, 1.58), diagnosis = {{kind = "latency", score = 35,
       text = "latency-bound: neither DRAM (72%) nor the SMs (31%) are busy"}}},
    {ok = true, tool = "ncu", ms = 2400, candidate = summary(91.3, 0.2777),
     reference = summary(60.1, 1.58), diagnosis = diag}}})
db:journal_append(run, "profile", json.encode{ids = {ids[1]}, reference = true},
  json.encode{t = 2.5, profiles = {{ok = false, tool = "ncu", reason = "permission",
    error = "E_UNSUPPORTED: ==ERROR== ERR_NVGPUCTRPERM"}}})
db:run_finish(run, "done")
print(("run %d best %d"):format(run, best_id))

-- run 2: nothing verified
local run2 =
  db:run_create{recipe = "softmax", recipe_path = "recipes/softmax.yaml", strategy = "tune"}
for i = 1, 3 do
  local c = db:candidate_add{run = run2, origin = "tune", lang = "cuda", source = "broken " .. i}
  db:eval_add{candidate = c, stage = "compile", verdict = "compile_error", ok = false,
              result = {ok = false, verdict = "compile_error", stage = "compile",
                        message = "error: expected a declaration"}}
end
db:run_finish(run2, "failed")
print(("run %d best none"):format(run2))
print(("profiled %d parent %d failed %d"):format(prof, parent_of[prof], ids[1]))
db:close()
