-- kevo.recipe: load mirrors the C recipe; eval; find; list; failures return nil, msg, code.
local recipe = require "kevo.recipe"
local src = os.getenv("KEVO_SRC")
local function fixture(name) return src .. "/tests/recipes/" .. name end

local r = assert(recipe.load(fixture("good.yaml")))
assert(r.name == "good" and r.version == 1)
assert(r.path == fixture("good.yaml") and r.dir == src .. "/tests/recipes")
assert(r.params.M == 64 and r.params.N == 100 and math.type(r.params.M) == "integer")
assert(r.param_names[1] == "M" and r.param_names[2] == "N")
assert(#r.shapes == 3 and r.shapes[1].label == "M=64,N=100")
assert(r.shapes[2].params.M == 3 and r.shapes[2].params.N == 100)
assert(#r.inputs == 2 and #r.outputs == 1)
assert(r.inputs[1].name == "x" and r.inputs[1].dtype == "f32")
assert(r.inputs[1].shape[1] == "M" and r.inputs[1].shape[2] == "N")
assert(r.inputs[1].init.kind == "normal" and r.inputs[1].init.a == "0" and
  r.inputs[1].init.b == "2")
assert(r.inputs[2].init.kind == "randint" and r.inputs[2].init.b == "N")
assert(r.outputs[1].name == "y" and r.outputs[1].init == nil)
assert(r.tolerance.f32.atol == 1e-4 and r.tolerance.f32.rtol == 1e-3)
assert(r.tolerance.i32.atol == 0)
assert(r.cost.bytes == "4*(2*M*N + M)" and r.cost.flops == "3*M*N")
assert(r.reference.lang == "cuda" and r.reference.file:match("good/gather%.cu$"))
assert(r.reference.launch == nil and next(r.reference.space) == nil)
local seed = r.seeds[1]
assert(seed.kernel == "gather_rows" and seed.launch:match("^return {kernels") and
  seed.launch_line == 24)
assert(seed.space.BLOCK[1] == 64 and math.type(seed.space.BLOCK[2]) == "integer")
assert(seed.space.FAST[1] == "true" and seed.space.knobs == nil)
assert(r.prompt == "Copy row idx[i] of x into row i of y.\n")

-- every shape's sizes evaluate with eval
for _, sh in ipairs(r.shapes) do
  assert(recipe.eval(r.cost.bytes, sh.params) == 4 * (2 * sh.params.M * sh.params.N + sh.params.M))
end

-- failures
local v, msg, code = recipe.load(fixture("bad_dtype.yaml"))
assert(v == nil and code == "E_RECIPE", msg)
assert(msg:find("bad_dtype.yaml:12:14: outputs.y.dtype: unknown dtype 'f33'", 1, true), msg)
v, msg, code = recipe.load(fixture("bad_syntax.yaml"))
assert(v == nil and code == "E_PARSE" and
  msg:find("bad_syntax.yaml:4:7: YAML syntax error", 1, true), msg)
v, msg, code = recipe.load(fixture("nope.yaml"))
assert(v == nil and code == "E_IO", msg)
v, msg, code = recipe.load("no_such_recipe_name")
assert(v == nil and code == "E_IO" and msg:find("not found"), msg)

-- eval
assert(recipe.eval("cdiv(N, 256)", {N = 1000}) == 4)
assert(math.type(recipe.eval("2*N", {N = 3})) == "integer")
assert(recipe.eval("N / 2.0", {N = 3}) == 1.5)
assert(recipe.eval("7") == 7)
v, msg, code = recipe.eval("N / Z", {N = 1, Z = 0})
assert(v == nil and code == "E_PARSE" and msg:find("column 3: division by zero"), msg)
v, msg, code = recipe.eval("io.open", {})
assert(v == nil and msg:find("unknown name 'io'"), msg)
assert(not pcall(recipe.eval, "N", {N = 1.5}))   -- misuse raises
assert(not pcall(recipe.eval, "N", {[1] = 2}))
assert(not pcall(recipe.eval))

-- find and list: the source tree's recipes are on the path
assert(recipe.find("softmax"):match("recipes/softmax%.yaml$"))
local names = {}
for _, it in ipairs(recipe.list()) do names[it.name] = it.path end
assert(names.softmax and names.vector_add)

-- the shipped recipes keep the contracts other parts are written against
local sm = assert(recipe.load("softmax"))
assert(sm.params.M == 16384 and sm.params.N == 8192 and #sm.shapes == 4)
assert(sm.shapes[4].params.M == 3 and sm.shapes[4].params.N == 1)
assert(sm.inputs[1].name == "x" and sm.outputs[1].name == "y")
assert(sm.cost.bytes == "8*M*N" and sm.cost.flops == "5*M*N" and sm.tolerance.f32.atol == 1e-5)
assert(#sm.seeds[1].space.BLOCK == 4 and #sm.seeds[1].space.VEC == 3)
local va = assert(recipe.load("vector_add"))
assert(va.params.N == 268435456 and va.shapes[2].params.N == 1 and va.shapes[4].params.N == 1048579)
assert(#va.inputs == 2 and va.inputs[2].name == "b" and va.outputs[1].name == "c")
assert(recipe.eval(va.cost.bytes, va.params) == 12 * 268435456)

-- knob_defaults: what a source compiles with when a knob is not given
local d = recipe.knob_defaults("cuda", "#ifndef BLOCK\n#define BLOCK 256 /* threads */\n#endif\n"
  .. "#ifndef VEC\n#  define VEC   4\n#endif\n#define NOT_A_KNOB 3\n#ifndef X\n#endif\n")
assert(d.BLOCK == "256" and d.VEC == "4" and d.NOT_A_KNOB == nil and d.X == nil)
d = recipe.knob_defaults("triton", "@triton.jit\ndef k(x_ptr, N, BLOCK: tl.constexpr = 1024, "
  .. "W: tl.constexpr):\n    pass\n")
assert(d.BLOCK == "1024" and d.W == nil and d.num_warps == nil, "only what the source declares")
assert(next(recipe.knob_defaults("cuda", "")) == nil)
assert(not pcall(recipe.knob_defaults, "cuda"))
print("recipe: all passed")
