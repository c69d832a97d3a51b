-- kevo.doctor: the checks behind `kevo doctor`. Each check returns a row:
-- {item=, ok=true|false|nil (nil: optional and absent), detail=, fix=}.
local json = require "kevo.json"
local kevo = require "kevo"

local M = {}

local function try_require(name)
  local ok, mod = pcall(require, name)
  if ok then return mod end
  return nil, (tostring(mod):match("[^\n]*"))
end

local function check_nvrtc()
  local cuda, why = try_require "kevo.cuda"
  if not cuda then
    return {item = "NVRTC", ok = false, detail = "kevo.cuda is not built: " .. why,
            fix = "rebuild kevo with the CUDA toolkit installed (NVRTC and headers)"}
  end
  local major, minor = cuda.version()
  local src = 'extern "C" __global__ void k(float *x) { x[threadIdx.x] = 1.0f; }'
  local mod, msg = cuda.compile(src, {name = "doctor.cu"})
  if not mod then
    return {item = "NVRTC", ok = false,
      detail = ("NVRTC %d.%d cannot compile: %s"):format(major, minor, msg),
            fix = "check the CUDA toolkit install (headers under include/, libnvrtc-builtins)"}
  end
  return {item = "NVRTC", ok = true,
          detail = ("NVRTC %d.%d, default target %s"):format(major, minor, cuda.default_arch())}
end

local function check_gpu()
  local evaluator, why = try_require "kevo.evaluator"
  if not evaluator then
    return {item = "GPU", ok = false, detail = "kevo.evaluator is not built: " .. why,
            fix = "rebuild kevo"}
  end
  local ok, dev, msg = pcall(evaluator.probe)
  if ok and not dev and tostring(msg):find("E_NOGPU", 1, true) then
    msg = msg:gsub("^E_NOGPU: ", "")
  end
  if not ok then
    return {item = "GPU", ok = false, detail = tostring(dev),
      fix = "see the worker's message above"}
  end
  if not dev then
    return {item = "GPU", ok = false, detail = msg,
            fix = "install the NVIDIA driver (libcuda.so.1) on a machine with a GPU; without one, "
                  .. "kevo compiles and checks candidates but cannot verify or time them"}
  end
  return {item = "GPU", ok = true,
          detail = ("%s (sm_%d%d, %d SMs, %.0f GB), copy bandwidth %.0f GB/s"):format(
            dev.name, dev.cc[1], dev.cc[2], dev.sms, (dev.mem_bytes or 0) / 1e9,
            dev.copy_gbps or 0)}
end

-- The GPUs a worker sees, and one worker started on each at once (what `kevo run --gpus all`
-- does): a row with a line per GPU and its worker.
local function check_gpus()
  local evaluator = try_require "kevo.evaluator"
  if not evaluator then return {item = "GPUs", ok = nil, detail = "kevo.evaluator is not built"} end
  local conf = require("kevo.config").gpus{dir = "."}
  local setting = conf and ("kevo.conf: gpus = " .. conf) or "kevo.conf sets no gpus: one worker"
  local list, msg = evaluator.gpus()
  if not list then
    return {item = "GPUs", ok = nil,
            detail = "none" .. (tostring(msg):find("E_NOGPU", 1, true) and " (see GPU)" or
                                (": " .. tostring(msg)))}
  end
  local workers = evaluator.probe_workers{gpus = "all"} or {}
  local lines, models, nmodels, ok = {}, {}, 0, true
  for i, g in ipairs(list) do
    local w = workers[i] or {}
    local d = w.device or g -- what the worker measures on, else what the driver lists
    local model = ("%s (sm_%d%d)"):format(d.name, d.cc[1], d.cc[2])
    if not models[model] then models[model], nmodels = true, nmodels + 1 end
    local wtext
    if w.device then
      wtext = ("worker ok, copy %.0f GB/s"):format(w.device.copy_gbps or 0)
    else
      ok = false
      wtext = "worker failed: " .. tostring(w.error or "not started")
    end
    lines[i] = ("gpu %d: %s, %.0f GB, bus %s; %s"):format(g.index, model, (g.mem_bytes or 0) / 1e9,
                                                          g.pci_bus or "?", wtext)
  end
  local detail = ("%d GPU%s; --gpus all starts %d worker%s (%s)"):format(#list,
    #list == 1 and "" or "s", #list, #list == 1 and "" or "s", setting)
  local fix
  if nmodels > 1 then
    ok = false
    detail = detail .. "; GPUs of " .. nmodels .. " models"
    fix = "--gpus all is refused (speed-ups are compared on one model only): give --gpus the " ..
          "numbers of GPUs of one model"
  elseif not ok then
    fix = "see the worker's message; kevo run --gpus leaves out no GPU it was given"
  end
  return {item = "GPUs", ok = ok, detail = detail, lines = lines, fix = fix}
end

local function check_archive()
  local archive, why = try_require "kevo.archive"
  if not archive then
    return {item = "archive", ok = false, detail = "kevo.archive is not built: " .. why,
      fix = "rebuild kevo"}
  end
  local path = os.getenv("KEVO_DB") or "kevo.db"
  local f = io.open(path, "rb")
  if not f then
    return {item = "archive", ok = true, detail = path .. " (not created yet; kevo run creates it)"}
  end
  f:close()
  local db, msg = archive.open(path)
  if not db then
    return {item = "archive", ok = false, detail = msg,
      fix = "move the file aside; kevo makes a new one"}
  end
  local runs = db:runs()
  db:close()
  return {item = "archive", ok = true, detail = ("%s, %d runs"):format(path, #runs)}
end

local function check_triton()
  local triton, why = try_require "kevo.triton"
  if not triton then
    return {item = "Triton", ok = false, detail = "kevo.triton is not built: " .. why,
      fix = "rebuild kevo"}
  end
  local ok, version = triton.available()
  if not ok then
    return {item = "Triton", ok = nil, detail = version,
            fix =
              "run scripts/setup.sh (installs Triton in .venv) or set KEVO_PYTHON to a python3 "
              .. "with triton"}
  end
  return {item = "Triton", ok = true, detail = version}
end

local function check_llm(probe)
  local llm, why = try_require "kevo.llm"
  if not llm then
    return {item = "LLM", ok = false, detail = "kevo.llm is not built: " .. why,
      fix = "rebuild kevo"}
  end
  local d = llm.doctor{probe = probe}
  if not d.configured then
    return {item = "LLM", ok = nil, detail = d.detail or "no LLM configured",
            fix = d.fix or
              "set KEVO_LLM=provider:model and the key variable; without an LLM kevo tunes "
              .. "templates"}
  end
  return {item = "LLM", ok = d.ok, detail = d.detail, fix = d.fix}
end

-- main(args) for `kevo doctor [--json] [--offline]`: prints the report; returns the exit code.
function M.main(args)
  local opts = {json = false, probe_llm = true}
  for _, a in ipairs(args or {}) do
    if a == "--json" then opts.json = true
    elseif a == "--offline" then opts.probe_llm = false
    else
      io.stderr:write(("kevo doctor: unknown argument '%s' (see kevo doctor --help)\n"):format(a))
      return 2
    end
  end
  local rows = {
    {item = "kevo", ok = true, detail = ("%s (%s)"):format(kevo.version, kevo.commit)},
    check_nvrtc(),
    check_gpu(),
    check_gpus(),
    check_archive(),
    check_triton(),
    check_llm(opts.probe_llm),
  }
  local can_search = rows[2].ok and rows[3].ok
  if opts.json then
    print(json.encode({checks = rows, can_search = can_search and true or false}, {pretty = true}))
  else
    for _, r in ipairs(rows) do
      local mark = r.ok == true and "ok  " or (r.ok == nil and "--  " or "MISS")
      print(("%s %-8s %s"):format(mark, r.item, r.detail or ""))
      for _, line in ipairs(r.lines or {}) do print(("              %s"):format(line)) end
      if r.ok ~= true and r.fix then print(("              fix: %s"):format(r.fix)) end
    end
    print(can_search and "kevo can search for kernels here."
      or "kevo cannot verify or time kernels here (see above); it can still compile and check "
        .. "them.")
  end
  return can_search and 0 or 1
end

return M
