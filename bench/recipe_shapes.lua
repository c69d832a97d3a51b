-- Prints, as JSON, every named recipe's benchmark params, cost (bytes, flops) and tensors
-- (name, dtype, dims evaluated at the benchmark shape, role, init with its arguments evaluated:
-- lo, hi). Used by bench/recipes.sh to build the PyTorch
-- baselines on exactly the shapes kevo times.   usage: kevo script bench/recipe_shapes.lua NAME...
local recipe = require "kevo.recipe"
local json = require "kevo.json"
local out = {}
for _, name in ipairs(arg) do
  local r = assert(recipe.load(name))
  local params = r.shapes[1].params
  local t = {params = params, tensors = json.array()}
  if r.cost then
    t.bytes = r.cost.bytes and recipe.eval(r.cost.bytes, params)
    t.flops = r.cost.flops and recipe.eval(r.cost.flops, params)
  end
  for _, role in ipairs {"inputs", "outputs"} do
    for _, x in ipairs(r[role]) do
      local dims = json.array()
      for _, e in ipairs(x.shape) do dims[#dims + 1] = assert(recipe.eval(e, params)) end
      local init = x.init
      if init then
        init = {kind = init.kind, a = init.a, b = init.b,
                lo = init.a and recipe.eval(init.a, params),
                hi = init.b and recipe.eval(init.b, params)}
      end
      t.tensors[#t.tensors + 1] =
        {name = x.name, dtype = x.dtype, dims = dims, role = role:sub(1, -2), init = init}
    end
  end
  out[name] = t
end
print(json.encode(out))
