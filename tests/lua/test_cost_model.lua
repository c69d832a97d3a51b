-- The synthetic evaluator (examples/cost_model.lua) on every packaged recipe: each seed's whole
-- knob space, as `kevo run` hands it to a strategy. The seeds' guarded `#error` lines (knob
-- checks inside #if) are not compile errors; the seed at its own defaults verifies; the surface
-- has an optimum that is not the seed's default everywhere, so autotune has something to find.
-- Then `kevo run` itself on the packaged softmax: no compile_error in the summary.
local search = require "kevo.search"
local recipe = require "kevo.recipe"
local run = require "kevo.run"

local src = os.getenv("KEVO_SRC") or "."
local model = dofile(src .. "/examples/cost_model.lua")
local host = {read_file = function(p)
  local f, err = io.open(p, "rb")
  if not f then return nil, err end
  local t = f:read("a"); f:close(); return t
end}

local fails = 0
local function check(cond, fmt, ...)
  if not cond then fails = fails + 1; print("FAIL " .. string.format(fmt, ...)) end
end

local each_point = require("kevo.searchutil").each_point

local names = {}
for f in io.popen("ls " .. src .. "/recipes/*.yaml"):lines() do names[#names + 1] = f end
check(#names >= 10, "expected the 10 packaged recipes, found %d", #names)
for _, path in ipairs(names) do
  local task = assert(recipe.load(path))
  local seeds = run.task_seeds(task, host)
  local ctx =
    search.new{task = task, seeds = seeds, evaluator = search.model_evaluator(model, task),
                         on_log = function() end}
  for _, seed in ipairs(ctx.seeds) do
    local where = string.format("%s seed %d (%s)", task.name, seed.index, seed.lang)
    local def = ctx:evaluate({ctx:candidate(seed, ctx:default_knobs(seed.space, seed), "seed")})[1]
    check(def.ok, "%s at its defaults: %s %s", where, def.verdict, def.message or "")
    local cands = {}
    each_point(seed.space, function(k) cands[#cands + 1] = ctx:candidate(seed, k, "tune") end)
    local got = ctx:evaluate(cands)
    local ok, compile_errors, fastest, slowest = 0, 0, nil, nil
    for _, e in ipairs(got) do
      if e.verdict == "compile_error" then compile_errors = compile_errors + 1 end
      if e.ok then
        ok = ok + 1
        local ms = e.bench.median_ms
        fastest, slowest = math.min(fastest or ms, ms), math.max(slowest or ms, ms)
      end
    end
    check(compile_errors == 0, "%s: %d of %d points are compile_error", where, compile_errors, #got)
    check(ok * 2 >= #got, "%s: only %d of %d points verify", where, ok, #got)
    check(fastest and slowest > fastest * 1.1, "%s: a flat surface (%s .. %s ms)", where,
          tostring(fastest), tostring(slowest))
    check(fastest and def.ok and fastest < def.bench.median_ms,
          "%s: the default is already the best point", where)
  end
end

-- an unguarded #error stays a compile error (the walkthrough's broken candidate)
local bad = model({lang = "cuda", source = "int x;\n#error oops\n", knobs = {}}, {})
check(bad.verdict == "compile_error" and bad.message:find("line 2"), "unguarded #error: %s",
      tostring(bad.verdict))
local guarded = model({lang = "cuda", source = "#if 1\n#error no\n#endif\n", knobs = {}}, {})
check(guarded.verdict == "ok", "guarded #error: %s", tostring(guarded.verdict))

-- kevo run on the packaged softmax, as the model's header shows it
local kevo_bin = os.getenv("KEVO") or "kevo"
local tmp = os.tmpname()
local cmd = string.format("cd %q && KEVO_DB=%q KEVO_EVALUATOR=model:%q %q run softmax " ..
                          "--max-evals 12 --out %q 2>&1", src, tmp .. ".db",
                          src .. "/examples/cost_model.lua", kevo_bin, tmp .. ".out")
local p = io.popen(cmd)
local out = p:read("a")
local okrun = p:close()
os.remove(tmp); os.remove(tmp .. ".db"); os.remove(tmp .. ".db-wal"); os.remove(tmp .. ".db-shm")
os.execute("rm -rf " .. string.format("%q", tmp .. ".out"))
check(okrun, "kevo run softmax failed:\n%s", out)
check(not out:find("compile_error"), "kevo run softmax has compile errors:\n%s", out)
check(out:find(" (%d+) evaluations, %1 verified, "), "kevo run softmax: not all verified:\n%s", out)

if fails > 0 then print(fails .. " failure(s)"); return 1 end
print("ok: the cost model gives a surface on " .. #names .. " recipes")
return 0
