-- kevo.export: `kevo export RUN DIR`: the best verified kernel of a run as files another project
-- can use without kevo (README.md in DIR says what each is):
--   kernel.cu | kernel.py     the source, as verified
--   kernel.cubin              recompiled from that source with its knobs for the recorded arch
--   reference.cubin           the recipe's reference, for make_test_vectors.py (CUDA references)
--   launch.json               tensors, shapes, per-shape plans, the launch chunk, knobs
--   kernel_launch.h           C: load the cubin and launch it (CUDA driver API)
--   torch_ext.py              PyTorch: the same through ctypes
--   make_test_vectors.py      inputs + reference outputs, made on a GPU (kevo stores no tensors)
--   provenance.json           where every number came from
-- main(args, sys): sys.mkdir and sys.read_file come from the C command (kevo_l_run_main).
local json = require "kevo.json"
local kevo = require "kevo"
local report = require "kevo.report"
local plans = require "kevo.export.plan"

local M = {}

local function try_require(name)
  local ok, mod = pcall(require, name)
  if ok then return mod end
  return nil, tostring(mod):match("[^\n]*")
end

local function decode(t)
  if type(t) ~= "string" then return t end
  local v = json.decode(t)
  return type(v) == "table" and v or nil
end

local function write(dir, name, data)
  local path = dir .. "/" .. name
  local f, err = io.open(path, "wb")
  if not f then error({msg = "cannot write " .. path .. ": " .. err}) end
  local ok, werr = f:write(data)
  f:close()
  if not ok then error({msg = "cannot write " .. path .. ": " .. tostring(werr)}) end
end

-- load_recipe(run): the recipe table (kevo.recipe), or nil, why. The stored path first, then
-- the name along the recipe search path.
local function load_recipe(run)
  local recipe, why = try_require "kevo.recipe"
  if not recipe then return nil, why end
  local errs = {}
  for _, what in ipairs({run.recipe_path, run.recipe}) do
    local r, msg = recipe.load(what)
    if r then return r end
    errs[#errs + 1] = msg
  end
  return nil, table.concat(errs, "; ")
end

-- arch_of(best): the architecture the kernel was measured on ("sm_90").
local function arch_of(best, result, fp)
  local cc = type(fp.cc) == "table" and fp.cc or (result.device or {}).cc
  if type(cc) == "table" and cc[1] then return ("sm_%d%d"):format(cc[1], cc[2] or 0) end
  local arch = result.compile and result.compile.arch
  if type(arch) == "string" and arch:match("^sm_%d+a?$") then return arch end
  return nil -- not said (or "model": the model evaluator compiled nothing)
end

local function defines_of(knobs)
  local d = {}
  for k, v in pairs(knobs or {}) do
    if type(k) == "string" and (type(v) == "number" or type(v) == "boolean" or
      type(v) == "string") then
      d[k] = v
    end
  end
  return d
end

-- compile_cuda(src, knobs, arch, name): cubin bytes, info | nil, why.
local function compile_cuda(src, knobs, arch, name)
  local cuda, why = try_require "kevo.cuda"
  if not cuda then return nil, "kevo.cuda is not in this build: " .. why end
  local m, info = cuda.compile(src, {arch = arch, defines = defines_of(knobs), name = name})
  if not m then return nil, info end
  local bytes = m:cubin()
  local i = m:info()
  m:close()
  return bytes, i
end

-- compile_triton(src, knobs, plan, tensors, arch): cubin, info, plan fixed for the cubin | nil,
-- why.
local TRITON_TYPES =
  {f32 = "*fp32", f16 = "*fp16", bf16 = "*bf16", f64 = "*fp64", i32 = "*i32", i64 = "*i64",
  u8 = "*u8", i8 = "*i8", bool = "*i1", f8e4m3 = "*fp8e4nv", f8e5m2 = "*fp8e5"}
local function compile_triton(src, knobs, plan, tensors, arch)
  local triton, why = try_require "kevo.triton"
  if not triton then return nil, "kevo.triton is not in this build: " .. why end
  local ok, version = triton.available()
  if not ok then return nil, "Triton is not available here: " .. tostring(version) end
  if #plan.kernels ~= 1 then return nil, "only single-kernel Triton launches are exported" end
  local k = plan.kernels[1]
  local dtype = {}
  for _, t in ipairs(tensors) do dtype[t.name] = t.dtype end
  local sig = {}
  for i, a in ipairs(k.args) do
    local kind, v = next(a)
    sig[i] = kind == "buf" and (TRITON_TYPES[dtype[v]] or "*u8") or kind
  end
  local constexprs, num_warps, num_stages = {}, nil, nil
  for name, v in pairs(knobs or {}) do
    if name == "num_warps" then num_warps = v elseif name == "num_stages" then num_stages = v
    else constexprs[name] = v end
  end
  local m, info = triton.compile(src, {kernel = k.name, signature = sig, constexprs = constexprs,
                                       num_warps = num_warps, num_stages = num_stages, arch = arch,
                                       name = "kernel.py"})
  if not m then return nil, info end
  local bytes = m:cubin()
  m:close()
  k.name, k.block, k.shared = info.name, {info.threads, 1, 1}, info.shared or 0
  for _, x in ipairs(info.extra_args or {}) do
    if (x.bytes_per_program or 0) > 0 then
      local n = x.bytes_per_program * k.grid[1] * k.grid[2] * k.grid[3]
      plan.scratch[#plan.scratch + 1] = {name = x.name, bytes = n, zero = false}
      k.args[#k.args + 1] = {buf = x.name}
    else
      k.args[#k.args + 1] = {null = json.null}
    end
  end
  return bytes, info, plan
end

-- tensors_of(recipe): {{name, role, dtype, shape = {exprs}, init}} inputs then outputs.
local function tensors_of(recipe)
  local out = {}
  for _, role in ipairs({"inputs", "outputs"}) do
    for _, t in ipairs(recipe[role] or {}) do
      local init = t.init and {kind = t.init.kind, a = t.init.a, b = t.init.b} or nil
      if init then
        local r = require "kevo.recipe"
        init.a_value = init.a and r.eval(init.a, recipe.params) or nil
        init.b_value = init.b and r.eval(init.b, recipe.params) or nil
      end
      out[#out + 1] =
        {name = t.name, role = role:sub(1, -2), dtype = t.dtype, shape = t.shape, init = init}
    end
  end
  return out
end

local function dims_at(recipe, tensors, params)
  local r, dims = require "kevo.recipe", {}
  for _, t in ipairs(tensors) do
    local d = {}
    for i, e in ipairs(t.shape or {}) do d[i] = math.tointeger(assert(r.eval(e, params))) end
    dims[t.name] = d
  end
  return dims
end

local USAGE = "usage: kevo export RUN|last DIR [--db PATH]"

local function fail(code, msg)
  io.stderr:write("kevo export: ", msg, "\n")
  return code
end

-- export(db, run, dir, sys): writes the files; returns the list of {file, what} and the notes.
local function export(db, run, dir, sys)
  local best = assert(db:best(run.id))
  local result, fp = decode(best.result) or {}, decode(best.fingerprint) or {}
  local knobs = decode(best.candidate_knobs) or {}
  local lang = best.candidate_lang or "cuda"
  local src = best.candidate_source
  local files, notes = {}, {}
  local function wrote(name, what) files[#files + 1] = {file = name, what = what} end
  local function note(s) notes[#notes + 1] = s end
  local synthetic = report.synthetic_model(decode(run.config))
  if synthetic then note(report.synthetic_line(synthetic)) end

  local by_id = {}
  for _, c in ipairs(assert(db:candidates(run.id))) do by_id[c.id] = c end
  local chain = {}
  for _, c in ipairs(report.lineage(by_id, best.candidate)) do
    chain[#chain + 1] =
      {candidate = c.id, origin = c.origin, source_hash = c.source_hash,
      best_speedup = c.best_speedup}
  end

  local ok, err = sys.mkdir(dir)
  if not ok then error({msg = err}) end
  local src_name = lang == "triton" and "kernel.py" or "kernel.cu"
  write(dir, src_name, src)
  wrote(src_name, "the kernel's source, byte for byte as verified")

  local arch = arch_of(best, result, fp)
  if not arch then
    local cuda = try_require "kevo.cuda"
    arch = cuda and cuda.default_arch() or "sm_90"
    note(synthetic and ("a synthetic run names no GPU; compiled for " .. arch)
         or ("the archive does not say which architecture the kernel was measured on; compiled "
           .. "for " .. arch))
  end

  -- shapes and plans
  local recipe, rwhy = load_recipe(run)
  local config = decode(run.config) or {}
  local params = recipe and recipe.params or config.params
  local chunk = best.candidate_launch or plans.chunk_of(src, lang)
  if not chunk and recipe then
    for _,
    s in ipairs(recipe.seeds or {}) do if s.lang == lang and s.launch then chunk = s.launch end end
  end
  local tensors = recipe and tensors_of(recipe) or {}
  if not recipe then
    note("the recipe could not be read again (" .. tostring(rwhy) ..
      "): launch.json has no tensors or per-shape plans")
  end
  -- plans come from the evaluator's own resolver (runtime/launch.c, with the knobs the source
  -- defaults as an evaluation sees them), so what export writes is what was measured
  local ev
  if recipe then
    local evaluator = try_require "kevo.evaluator"
    ev = evaluator and evaluator.new{recipe = recipe.path}
  end
  local function plans_of(source, source_lang, launch, kn)
    if not ev then return nil, "the recipe could not be read again" end
    local list, perr = ev:plans{lang = source_lang, source = source, launch = launch, knobs = kn}
    if not list then return nil, perr end
    local by = {}
    for i, p in ipairs(list) do by[i] = p.plan end
    return by
  end
  local shapes = {}
  local shape_list = recipe and
    recipe.shapes or (params and {{label = "benchmark", params = params}}) or {}
  local cand_plans, perr
  if chunk then
    cand_plans, perr = plans_of(src, lang, chunk, knobs)
    if not cand_plans then note("no per-shape plans: " .. tostring(perr)) end
  end
  for i, s in ipairs(shape_list) do
    local sh = {label = s.label, params = s.params, benchmark = i == 1 or nil}
    if recipe then sh.dims = dims_at(recipe, tensors, s.params) end
    sh.plan = cand_plans and cand_plans[i]
    shapes[i] = sh
  end
  if not chunk then
    note("no launch chunk (neither in the candidate nor its source): launch.json has no plan")
  end
  local bench_plan = shapes[1] and shapes[1].plan

  -- cubins
  local cubin, cinfo
  if lang == "cuda" then
    cubin, cinfo = compile_cuda(src, knobs, arch, "kernel.cu")
  elseif bench_plan then
    local fixed
    cubin, cinfo, fixed = compile_triton(src, knobs, bench_plan, tensors, arch)
    if cubin then
      -- the Triton calling convention (block, shared, trailing scratch) applies to every shape
      for _,
      sh in ipairs(shapes) do if sh.plan and
      sh.plan ~= fixed then compile_triton(src, knobs, sh.plan, tensors, arch) end end
    end
  else
    cinfo = "no plan to derive the Triton signature from"
  end
  if cubin then
    write(dir, "kernel.cubin", cubin)
    wrote(
      "kernel.cubin", ("%s cubin (%d bytes), recompiled from %s%s"):format(arch, #cubin, src_name,
      lang == "triton" and " by the Triton compiler" or " by NVRTC with the knobs as defines"))
  else
    note("no kernel.cubin: " .. tostring(cinfo))
  end

  local ref_out
  if recipe and recipe.reference and recipe.reference.lang == "cuda" then
    local rsrc = sys.read_file(recipe.reference.file)
    local rchunk = rsrc and (recipe.reference.launch or plans.chunk_of(rsrc, "cuda"))
    local rcubin, rwhy2 = nil, "the reference source or its launch chunk is missing"
    if rchunk then rcubin, rwhy2 = compile_cuda(rsrc, {}, arch, "reference.cu") end
    if rcubin then
      write(dir, "reference.cubin", rcubin)
      wrote("reference.cubin", "the recipe's reference kernel, for make_test_vectors.py")
      local ref_plans = plans_of(rsrc, "cuda", rchunk, {})
      for i, sh in ipairs(shapes) do sh.reference_plan = ref_plans and ref_plans[i] end
      ref_out = {cubin = "reference.cubin", source = recipe.reference.file}
    else
      note("no reference.cubin: " .. tostring(rwhy2))
    end
  end

  local launch = {lang = lang, arch = arch, cubin = cubin and "kernel.cubin" or nil, knobs = knobs,
                  launch_chunk = chunk, tensors = json.array(tensors),
                  tolerance = recipe and recipe.tolerance or nil,
                  params = params, shapes = json.array(shapes), plan = bench_plan,
                  reference = ref_out}
  write(dir, "launch.json", json.encode(launch, {pretty = true}))
  wrote("launch.json",
    "tensors, the recipe's shapes with a plan each (grid, block, shared, args), knobs, the launch "
    .. "chunk")

  if bench_plan then
    local names = recipe and recipe.param_names or {}
    if not recipe then for k in pairs(params or {}) do names[#names + 1] =
      k end table.sort(names) end
    local hok, header = pcall(require("kevo.export.header").render, {
      plan = bench_plan, params = params, param_names = names, cubin = cubin,
      shape_label = shapes[1].label,
      provenance_line = ("run %d, candidate %d, %s"):format(run.id, best.candidate, arch)})
    if hok then
      write(dir, "kernel_launch.h", header)
      wrote("kernel_launch.h",
        "C header: load the cubin (embedded) and launch it with the CUDA driver API")
    else
      note("no kernel_launch.h: " .. tostring(header))
    end
  else
    note("no kernel_launch.h: no plan at the benchmark shape")
  end
  local py = require "kevo.export.python"
  write(dir, "torch_ext.py", py.torch_ext)
  wrote("torch_ext.py", "PyTorch: load the cubin through ctypes and launch it on torch's stream")
  if ref_out then
    write(dir, "make_test_vectors.py", py.make_test_vectors)
    wrote("make_test_vectors.py",
      "on a GPU: inputs, reference outputs, and a check of the kernel against them")
  else
    note(
      "no make_test_vectors.py: the reference kernel could not be exported, and kevo stores no "
      .. "tensors")
  end

  local bench = result.bench or {}
  local provenance = {
    recipe =
      {name = run.recipe, path = run.recipe_path, hash = run.recipe_hash,
      reread_from = recipe and recipe.path},
    run =
      {id = run.id, strategy = run.strategy, status = run.status, seed = run.seed,
      created = run.created,
           finished = run.finished, kevo_version = run.kevo_version, kevo_commit = run.kevo_commit,
           host = run.host},
    exported_by = {kevo_version = kevo.version, kevo_commit = kevo.commit, at = os.time()},
    candidate =
      {id = best.candidate, origin = best.candidate_origin, lang = lang,
      source_hash = best.candidate_source_hash,
                 knobs = knobs, parent_chain = json.array(chain)},
    evaluation =
      {id = best.id, verdict = best.verdict, stage = best.stage, speedup = best.speedup,
      median_ms = best.median_ms,
                  bench = result.bench, verify = result.verify,
                  compile = result.compile and {arch = result.compile.arch,
                  kernels = result.compile.kernels} or nil},
    synthetic = synthetic and
      {model = synthetic, note = "computed by the model evaluator, not measured"} or nil,
    measured_on = not synthetic and
      {device = fp.device or (result.device or {}).name, cc = fp.cc or (result.device or {}).cc,
                   driver = fp.driver, sm_clock_mhz = bench.sm_clock_mhz or fp.sm_clock_mhz,
                   mem_clock_mhz = fp.mem_clock_mhz, temp_c = bench.temp_c or fp.temp_c,
                   kevo_commit = fp.kevo_commit, fingerprint = fp} or nil,
    cubin = cubin and {file = "kernel.cubin", arch = arch, bytes = #cubin,
                       compiler = lang == "triton" and "triton" or "nvrtc",
                       hash = type(cinfo) == "table" and cinfo.hash or nil} or nil,
    notes = json.array(notes),
  }
  write(dir, "provenance.json", json.encode(provenance, {pretty = true}))
  wrote("provenance.json",
    "recipe, run, candidate and its parent chain, GPU, driver, clocks, timings, verdict")
  write(dir, "README.md",
    require("kevo.export.readme").render{run = run, best = best, files = files, notes = notes,
                                                               lang = lang, arch = arch,
                                                               params = params,
                                                               synthetic = synthetic})
  return files, notes
end

-- main(args, sys): `kevo export`; returns the exit code (0 written; 1 no verified kernel, the
-- archive unreadable, a file not written; 2 bad usage, no archive, no such run).
function M.main(args, sys)
  local o, pos, i = {}, {}, 1
  while i <= #args do
    local a = args[i]
    if a == "--db" then
      if not args[i + 1] then return fail(2, "--db needs a value\n" .. USAGE) end
      o.db, i = args[i + 1], i + 1
    elseif a:sub(1, 2) == "--" then return fail(2, ("unknown option '%s'\n%s"):format(a, USAGE))
    else pos[#pos + 1] = a end
    i = i + 1
  end
  if #pos ~= 2 then return fail(2, "want a run and a directory\n" .. USAGE) end
  local db, msg, code = report.open(o.db or require("kevo.archive").default_path())
  if not db then return fail(code, msg) end
  local run, err = report.find_run(db, pos[1])
  if not run then db:close(); return fail(2, err) end
  if not db:best(run.id) then
    db:close()
    return fail(
      1, ("run %d has no verified kernel: no candidate passed verification, so there is nothing "
      .. "to export"):format(run.id))
  end
  local ok, files, notes = pcall(export, db, run, pos[2], sys)
  db:close()
  if not ok then
    if type(files) == "table" then return fail(1, files.msg) end
    error(files, 0)
  end
  print(("exported run %d's best kernel to %s:"):format(run.id, pos[2]))
  for _, f in ipairs(files) do print(("  %-22s %s"):format(f.file, f.what)) end
  for _, n in ipairs(notes) do print("  note: " .. n) end
  return 0
end

return M
