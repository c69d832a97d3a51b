-- The profile stage as strategies and the model see it (docs/profile.md): ctx:profile's
-- contract (only the run's verified entries, one evaluation of the budget each, free when
-- asked again, cut by the budget like a batch, an evaluator that cannot profile says so);
-- kevo.prompt carrying the diagnosis; and, from the metric sets recorded on an H200
-- (tests/fixtures/ncu/known_h200.json), each known kernel's diagnosis naming its bottleneck.
local search = require "kevo.search"
local prompt = require "kevo.prompt"
local evaluator = require "kevo.evaluator"

local src = os.getenv("KEVO_SRC") or "."
local model = dofile(src .. "/examples/cost_model.lua")
local SEED = "#ifndef BLOCK\n#define BLOCK 256\n#endif\n__global__ void k() { /* BLOCK VEC */ }\n"

local asked = {}
local function new_ctx(max_evals, can_profile)
  local ev = search.model_evaluator(model, {})
  if can_profile then
    ev.profile_many = function(list, opts)
      asked[#asked + 1] = {n = #list, reference = opts.reference}
      local out = {}
      for i = 1, #list do
        out[i] = {ok = true, candidate = {dram_pct = 90}, diagnosis = {{kind = "dram_peak",
          text = "memory-bound at 90% of DRAM bandwidth"}},
          feedback = "Hardware profile (Nsight Compute), most important first:\n1. memory-bound " ..
            "at 90% of DRAM bandwidth.\n"}
      end
      return out
    end
  end
  return search.new{task = {name = "t"}, evaluator = ev,
    seeds = {{lang = "cuda", source = SEED, file = "k.cu",
              space = {{name = "BLOCK", values = {32, 64, 128, 256, 512, 1024}}}}},
    max_evals = max_evals, on_log = function() end}
end

local function cands(ctx, n)
  local out = {}
  for i = 1, n do out[i] = ctx:candidate(ctx.seeds[1], {BLOCK = 32 << (i - 1)}, "test") end
  return out
end

do -- the contract
  local ctx = new_ctx(6, true)
  local got = ctx:evaluate(cands(ctx, 3))
  assert(ctx.evals == 3)
  local ok, err = pcall(ctx.profile, ctx, {{n = 1, candidate = {}}})
  assert(not ok and tostring(err):find("not an entry of this run"), tostring(err))
  ok, err = pcall(ctx.profile, ctx, got, {refrence = false})
  assert(not ok and tostring(err):find("unknown option 'refrence'"), tostring(err))
  local ps = ctx:profile({got[1], got[2]}, {reference = false})
  assert(#ps == 2 and ps[1].ok and got[1].profile == ps[1], "profiles kept on the entries")
  assert(ctx.evals == 5, "each profile is one evaluation: " .. ctx.evals)
  assert(#asked == 1 and asked[1].n == 2 and asked[1].reference == false, "one batch")
  local again = ctx:profile(got[1])
  assert(again[1] == ps[1] and ctx.evals == 5 and #asked == 1, "asked again: free")
  -- the budget has one left: the second is cut, with the stop
  local rest, stop = ctx:profile({got[3], got[3]})
  assert(#rest == 2 and rest[1].ok and rest[2] == rest[1], "a repeat in the list is one profile")
  assert(ctx.evals == 6 and stop == nil)
  local none, s2 = ctx:profile({got[2]}) -- profiled before: free even with the budget spent
  assert(none[1] == ps[2] and s2 == nil)
  ok, err = pcall(ctx.profile, ctx, {got[3]})
  assert(ok, "a profiled entry needs no budget")
  -- the model's prompt carries the diagnosis with the entry's result
  local text = prompt.feedback(got[1])
  assert(text:find("Hardware profile", 1, true) and text:find("memory-bound at 90%", 1, true),
    text)
end

do -- an entry that did not verify, and an evaluator that cannot profile
  local ctx = new_ctx(nil, false)
  local got = ctx:evaluate(cands(ctx, 1))
  local p = ctx:profile(got)[1]
  assert(not p.ok and p.reason == "unsupported" and ctx.evals == 2, tostring(p.error))
  local bad = {n = got[1].n, candidate = got[1].candidate}
  assert(not pcall(ctx.profile, ctx, {bad}), "a copy of an entry is not the entry")
end

-- the recorded H200 metric sets: every known kernel's bottleneck named
local fixture = src .. "/tests/fixtures/ncu/known_h200.json"
local f = io.open(fixture, "rb")
if f then
  local reply = f:read("a")
  f:close()
  local want = {reference = "dram_peak", copy = "dram_peak", bank = "bank_conflicts",
                registers = "occupancy", uncoalesced = "uncoalesced", tensor = "tensor_busy"}
  for _, label in ipairs({"reference", "copy", "bank", "registers", "uncoalesced", "tensor"}) do
    local p = evaluator.read_profile(reply, label, label == "tensor" and "compute" or "memory")
    assert(p.ok, label .. ": " .. tostring(p.error))
    local hit = false
    for i = 1, 2 do hit = hit or (p.diagnosis[i] and p.diagnosis[i].kind == want[label]) end
    assert(hit, label .. ": want " .. want[label] .. " first or second, got " ..
      tostring(p.diagnosis[1] and p.diagnosis[1].kind))
    assert(p.feedback:find("Hardware profile", 1, true), p.feedback)
  end
  -- a failed reply reads as a reason, never an error
  local p = evaluator.read_profile('{"ok":false,"reason":"permission","error":"E_UNSUPPORTED: ' ..
    'ERR_NVGPUCTRPERM"}', "c0")
  assert(not p.ok and p.reason == "permission" and p.feedback:find("no permission"), p.feedback)
else
  io.stderr:write("note: " .. fixture .. " not recorded yet: the H200 part is skipped\n")
end
print("test_profile: ok")
