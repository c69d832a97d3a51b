-- Reads a worker's reply to the known kernels' profile request (tests/gpu/profile_worker.py,
-- or its recording in tests/fixtures/ncu/) and checks that each kernel's diagnosis names its
-- bottleneck: run by tests/gpu/test_profile.sh on the GPU host and by tests/lua/test_profile.lua
-- on the recording.   usage: kevo script profile_diagnose.lua REPLY.json
local evaluator = require "kevo.evaluator"
local path = assert(arg[1], "usage: profile_diagnose.lua REPLY.json")
local f = assert(io.open(path, "rb"))
local reply = f:read("a")
f:close()

-- label: the kind the diagnosis must rank among its first `within`, and the bench's bound
local want = {
  reference = {kind = "dram_peak", within = 1, bound = "memory"},
  copy = {kind = "dram_peak", within = 1, bound = "memory"},
  bank = {kind = "bank_conflicts", within = 1, bound = "memory"},
  registers = {kind = "occupancy", within = 1, bound = "memory"},
  uncoalesced = {kind = "uncoalesced", within = 1, bound = "memory"},
  tensor = {kind = "tensor_busy", within = 1, bound = "compute"},
  fma = {kind = "pipe_busy", within = 1, bound = "compute"},
}
local order = {"reference", "copy", "bank", "registers", "uncoalesced", "tensor", "fma"}
local bad = 0
for _, label in ipairs(order) do
  local w = want[label]
  local p = evaluator.read_profile(reply, label, w.bound)
  local kinds, hit = {}, false
  for i, d in ipairs(p.diagnosis or {}) do
    kinds[#kinds + 1] = d.kind
    if d.kind == w.kind and i <= w.within then hit = true end
  end
  print(string.format("%-12s %-4s want %-15s got %s", label, hit and "ok" or "FAIL", w.kind,
                      table.concat(kinds, ", ")))
  if p.diagnosis and p.diagnosis[1] then print("             1. " .. p.diagnosis[1].text) end
  if not p.ok then print("             no profile: " .. tostring(p.error)) end
  if not hit then bad = bad + 1 end
end
if bad > 0 then
  io.stderr:write(("profile_diagnose: %d of %d kernels misdiagnosed\n"):format(bad, #order))
  os.exit(1)
end
print("profile_diagnose: every known kernel's bottleneck named")
