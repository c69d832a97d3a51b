-- kevo.prompt: messages for kernel work.
--
--   prompt.system{lang=}              -> the system text: the contract a candidate must meet
--   prompt.task(task)                 -> the operator: name, summary, tensors, shapes, hints
--   prompt.feedback(result)           -> an evaluation result (docs/architecture.md) as text
--   prompt.messages{task=, lang=, best=, last=, notes=}   -> {{role=, content=}, ...}
--   prompt.followup{result=, best=, notes=}               -> text for the next user turn
-- `best` and `last` are {source=, launch=, result=}. A task is a recipe table (name, summary,
-- params, shapes, inputs, outputs, cost, prompt, reference) or any table with those fields; a
-- PyTorch reference ({lang = "torch", source = text}, kevo import) is given as the specification.
local M = {}

local MAX_DIAGNOSTICS, MAX_TEXT = 12, 4000

local function clip(s, n)
  s = tostring(s)
  n = n or MAX_TEXT
  if #s > n then return s:sub(1, n) .. "\n[... " .. (#s - n) .. " more bytes]" end
  return s
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  return keys
end

local function params_text(p)
  local parts = {}
  for _, k in ipairs(sorted_keys(p or {})) do parts[#parts + 1] = k .. "=" .. tostring(p[k]) end
  return table.concat(parts, ", ")
end

local function shape_text(s)
  if type(s) ~= "table" then return tostring(s) end
  local parts = {}
  for i, d in ipairs(s) do parts[i] = tostring(d) end
  return "[" .. table.concat(parts, ", ") .. "]"
end

-- Tensors as a list {name, dtype, shape} from a map {x = {dtype, shape}} or a list.
local function tensors(t)
  local out = {}
  if type(t) ~= "table" then return out end
  if #t > 0 then
    for _, v in ipairs(t) do out[#out + 1] = v end
  else
    for _, k in ipairs(sorted_keys(t)) do
      local v = t[k]
      out[#out + 1] = {name = k, dtype = v.dtype, shape = v.shape}
    end
  end
  return out
end

function M.system(opts)
  opts = opts or {}
  local lang = opts.lang or "cuda"
  if lang == "triton" then
    return table.concat({
      "You write fast, correct Triton kernels for NVIDIA GPUs.",
      "Answer with one ```python block holding the whole module: the @triton.jit kernel(s)",
      "and a launch description in a module-level '''kevo:launch ... ''' string (Lua: return",
      "{kernels = {{name=, grid=, block=, args=}}}) using the shape parameters, cdiv, min and max.",
      "Correctness first: every shape listed must verify, including sizes that are not",
      "multiples of any tile, and so must shapes you are not shown (drawn from each size's",
      "range) and inputs far from the usual ones (large values, large offsets).",
      "Explain briefly what you changed and why before the code.",
    }, "\n")
  end
  return table.concat({
    "You write fast, correct CUDA C kernels for NVIDIA GPUs (compiled with NVRTC).",
    "Contract for every answer:",
    "- One ```cuda block with the whole source: kernels declared extern \"C\" __global__,",
    "  no host code, no main(). Headers: the CUDA toolkit's (cuda_fp16.h, cuda_bf16.h,",
    "  cuda_fp8.h, mma.h, cub/, cooperative_groups.h) and the C/C++ ones for device code",
    "  (cmath, cfloat, climits, cstdint, limits, type_traits); INFINITY, FLT_MAX and M_PI need no",
    "  include.",
    "- Inside that block, a launch description in a comment:",
    "  /* kevo:launch",
    "  return {kernels = {{name = \"k\", grid = {cdiv(N, 256)}, block = {256}, shared = 0,",
    "                     args = {\"x\", \"y\", i32(N)}}}}",
    "  */",
    "  It is Lua: shape parameters are integers; cdiv, min, max and i32/i64/f32 wrappers exist;",
    "  a string argument names a tensor. Several kernels run in order; scratch buffers are",
    "  declared as scratch = {name = {bytes = n, zero = true}}.",
    "- Correctness first: every shape listed must verify, including sizes that are not",
    "  multiples of any tile; so must shapes you are not shown (drawn from each size's range)",
    "  and inputs far from the usual ones (large values, large offsets); outputs are poisoned",
    "  before each run and inputs are padded with NaN.",
    "- Explain briefly what you changed and why before the code.",
  }, "\n")
end

function M.task(task)
  assert(type(task) == "table", "prompt.task: task must be a table")
  local lines = {}
  local function add(s) lines[#lines + 1] = s end
  add("Operator: " .. tostring(task.name or "(unnamed)"))
  if task.summary then add("What it computes: " .. tostring(task.summary)) end
  local ins, outs = tensors(task.inputs), tensors(task.outputs)
  if #ins > 0 or #outs > 0 then
    add("Tensors (row-major, contiguous):")
    for _, t in ipairs(ins) do
      add(string.format("  input  %s: %s %s", t.name, t.dtype or "?", shape_text(t.shape)))
    end
    for _, t in ipairs(outs) do
      add(string.format("  output %s: %s %s", t.name, t.dtype or "?", shape_text(t.shape)))
    end
  end
  if task.params then add("Benchmark shape: " .. params_text(task.params)) end
  if type(task.shapes) == "table" and #task.shapes > 0 then
    local s = {}
    for i, p in ipairs(task.shapes) do s[i] = "{" .. params_text(p.params or p) .. "}" end
    add("Shapes that must also verify: " .. table.concat(s, " "))
  end
  if type(task.cost) == "table" then
    add(string.format("Cost at the benchmark shape: %s bytes moved%s",
      tostring(task.cost.bytes or "?"),
      task.cost.flops and (", " .. task.cost.flops .. " flops") or ""))
  end
  if task.prompt and task.prompt ~= "" then
    add("Notes from the recipe:\n" .. tostring(task.prompt))
  end
  local ref = task.reference
  if type(ref) == "table" and ref.lang == "torch" and type(ref.source) == "string" then
    add("Specification: the reference is this PyTorch problem. The kernel must compute what "
      .. "Model.forward returns, from the inputs in the order above (the forward's arguments, "
      .. "then the model's parameters and buffers); kevo draws its own inputs and weights, so "
      .. "get_inputs() and the model's initialisation only show their shapes:\n```python\n"
      .. clip(ref.source, 16000):gsub("\n+$", "") .. "\n```")
  end
  return table.concat(lines, "\n")
end

local function num(v, fmt) return v and string.format(fmt or "%.4g", v) or "?" end

function M.feedback(r)
  if type(r) ~= "table" then return "(no evaluation result)" end
  local lines = {}
  local function add(s) lines[#lines + 1] = s end
  add(string.format("Result: %s at stage %s%s", tostring(r.verdict or (r.ok and "ok" or "error")),
    tostring(r.stage or "?"), r.message and (": " .. tostring(r.message)) or ""))
  local c = r.compile
  if type(c) == "table" then
    if type(c.diagnostics) == "table" and #c.diagnostics > 0 then
      add("Compiler diagnostics:")
      for i, d in ipairs(c.diagnostics) do
        if i > MAX_DIAGNOSTICS then
          add(string.format("  ... %d more", #c.diagnostics - MAX_DIAGNOSTICS))
          break
        end
        add(string.format("  line %s:%s %s: %s", tostring(d.line or "?"), tostring(d.col or "?"),
          tostring(d.severity or "error"), tostring(d.message or "")))
      end
    elseif c.log and c.log ~= "" and r.verdict == "compile_error" then
      add("Compiler log:\n" .. clip(c.log))
    end
    if type(c.kernels) == "table" then
      for _, k in ipairs(c.kernels) do
        add(string.format("Kernel %s: %s registers, %s B static shared, %s B local, spills %s "
          .. "stores / %s loads", tostring(k.name), tostring(k.registers or "?"),
          tostring(k.shared_static or "?"), tostring(k.local_bytes or "?"),
          tostring(k.spill_stores or "?"), tostring(k.spill_loads or "?")))
      end
    end
  end
  local v = r.verify
  if type(v) == "table" then
    if v.mismatches and v.mismatches > 0 then
      add(string.format("Verification: %d mismatching elements", v.mismatches))
    end
    local w = v.worst
    if type(w) == "table" and (w.abs_err or w.expected) then
      add(string.format("Worst element: shape %s, tensor %s, index %s: expected %s, got %s "
        .. "(abs err %s, rel err %s)", tostring(w.shape or "?"), tostring(w.tensor or "?"),
        shape_text(w.index or w.flat), num(w.expected, "%.9g"), num(w.actual, "%.9g"),
        num(w.abs_err), num(w.rel_err)))
    end
    if type(v.flags) == "table" and #v.flags > 0 then
      add("Verification flags: " .. table.concat(v.flags, ", "))
    end
  end
  local b = r.bench
  if type(b) == "table" and b.median_ms then
    add(string.format("Timing: median %s ms (p10 %s, p90 %s) vs reference %s ms: speed-up %sx",
      num(b.median_ms), num(b.p10_ms), num(b.p90_ms), num(b.ref_median_ms), num(b.speedup, "%.3g")))
    if b.roofline_pct then
      add(string.format("Roofline: %.1f%% of the device's limit%s (%s GB/s, %s TFLOP/s)",
        b.roofline_pct, b.bound and (", " .. tostring(b.bound) .. "-bound") or "",
        num(b.gbps, "%.1f"), num(b.tflops, "%.2f")))
    end
  end
  if r.feedback and r.feedback ~= "" then add("Evaluator notes:\n" .. clip(r.feedback)) end
  -- the hardware's view (ctx:profile, docs/profile.md), unless the notes already hold it
  local p = r.profile
  if type(p) == "table" and type(p.feedback) == "string" and p.feedback ~= "" and
    not tostring(r.feedback or ""):find(p.feedback, 1, true) then
    add(clip(p.feedback))
  end
  return table.concat(lines, "\n")
end

local function candidate_text(title, c, lang)
  local parts = {title}
  local fence = lang == "triton" and "python" or "cuda"
  parts[#parts + 1] = "```" .. fence .. "\n" .. clip(c.source, 24000) .. "\n```"
  if c.launch and not tostring(c.source):find("kevo:launch", 1, true) then
    parts[#parts + 1] = "Launch:\n```lua\n" .. c.launch .. "\n```"
  end
  if c.result then parts[#parts + 1] = M.feedback(c.result) end
  return table.concat(parts, "\n")
end

function M.followup(opts)
  opts = opts or {}
  local parts = {}
  if opts.result then
    parts[#parts + 1] = "Your last candidate was evaluated.\n" .. M.feedback(opts.result)
  end
  if opts.best then
    parts[#parts + 1] = candidate_text("The best candidate so far:", opts.best, opts.lang)
  end
  if opts.notes then parts[#parts + 1] = tostring(opts.notes) end
  local r = opts.result
  if r and not r.ok then
    parts[#parts + 1] = "Fix the problem above and answer with the whole corrected source."
  else
    parts[#parts + 1] = "Make it faster without breaking correctness; answer with the whole source."
  end
  return table.concat(parts, "\n\n")
end

function M.messages(opts)
  assert(type(opts) == "table" and type(opts.task) == "table", "prompt.messages: task needed")
  local lang = opts.lang or "cuda"
  local user = {M.task(opts.task)}
  if opts.best then
    user[#user + 1] = candidate_text("The best candidate so far:", opts.best, lang)
  end
  if opts.last and opts.last ~= opts.best then
    user[#user + 1] = candidate_text("The last candidate tried:", opts.last, lang)
  end
  if opts.notes then user[#user + 1] = tostring(opts.notes) end
  user[#user + 1] = opts.best and "Write a faster kernel than the best one above." or
    "Write a correct, fast kernel for this operator."
  return {{role = "system", content = M.system{lang = lang}},
          {role = "user", content = table.concat(user, "\n\n")}}
end

return M
