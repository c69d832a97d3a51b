-- Prints, as JSON, what `kevo import` makes of a description: the recipe's tensors (in order,
-- with dims as numbers and init specs), params and the candidate signature. Used by
-- tests/gpu/kbench_test.py to build worker requests exactly as the recipe says.
-- usage: kevo script kbench_plan.lua DESC.json
local json = require "kevo.json"
local kbench = require "kevo.kbench"
local f = assert(io.open(arg[1], "rb"))
local d = assert(json.decode(f:read("a")))
f:close()
local r, err = kbench.recipe(d)
if not r then
  io.stderr:write(err, "\n")
  return 2
end
local out = {tensors = {}, params = {}, signature = r.signature, name = r.name,
             tolerance = d.tolerance ~= json.null and d.tolerance and d.tolerance.f32 or nil}
for _, t in ipairs(r.tensors) do
  out.tensors[#out.tensors + 1] = {name = t.name, dtype = t.dtype, role = t.role,
                                   init = t.init or "normal", shape = json.array(t.shape)}
end
for _, p in ipairs(r.params) do out.params[#out.params + 1] = {name = p.name, value = p.value} end
out.params = json.array(out.params)
io.write(json.encode(out), "\n")
return 0
