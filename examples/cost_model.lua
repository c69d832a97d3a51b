-- cost_model.lua: a synthetic evaluator for teaching and testing (never the default).
--
--   KEVO_EVALUATOR=model:examples/cost_model.lua kevo run recipes/softmax.yaml --max-evals 40
--
-- kevo calls the returned function with each candidate {lang, source, launch, knobs} and the
-- task, and turns the small table it returns into an evaluation result marked synthetic. No GPU,
-- no compiler: the "time" is a made-up but non-trivial function of the knobs and the source, so
-- a strategy can be watched (and tested) making choices. Runs in the sandbox: pure Lua.
-- KEVO_MODEL_DELAY=SECONDS makes kevo run wait that long per candidate before calling it, as
-- a real compile and benchmark would take time (tests that kill a run mid-evaluation).
--
-- The surface: a reference at 1.0 ms, the best point near 0.62 ms; BLOCK best at 512 (quadratic in log2), VEC best at 4,
-- too many registers when BLOCK >= 1024 and VEC >= 8; any other knob moves the time by a few
-- per cent (a hash of its value). Sources may carry `kevo-model: speed=F` (the loopback LLM
-- server writes it into its rewrites): the time is divided by F. Failures, as a real evaluator
-- gives them: `#error` in the source is a compile error, `kevo-model: wrong` and BLOCK*VEC above
-- 8192 are wrong results (with a worst element), BLOCK above 1024 cannot launch.

local function hash(s) -- FNV-1a, folded to [0, 1)
  local h = 0xcbf29ce484222325
  for i = 1, #s do h = (h ~ s:byte(i)) * 0x100000001b3 end
  return ((h >> 11) % 1000003) / 1000003
end

local function log2(x) return math.log(x, 2) end

return function(c, task)
  local src, k = c.source, c.knobs or {}
  local at = src:find("#error", 1, true)
  if at then
    local _, newlines = src:sub(1, at):gsub("\n", "")
    local line = newlines + 1
    return {verdict = "compile_error", message = "compile error at line " .. line,
            feedback = "kernel.cu(" .. line .. "): error: #error directive"}
  end
  local block = tonumber(k.BLOCK) or 256
  local vec = tonumber(k.VEC) or 1
  if block > 1024 then
    return {verdict = "launch_error", message = "block of " .. block .. " threads exceeds 1024"}
  end
  if src:find("kevo%-model: wrong") or block * vec > 8192 then
    return {verdict = "wrong", message = "y[3, 17]: expected 0.125, got 0.25",
            worst = {shape = "M=127,N=1000", tensor = "y", index = {3, 17}, expected = 0.125,
                     actual = 0.25, abs_err = 0.125, rel_err = 1.0}}
  end
  local vec_cost = ({[1] = 1.6, [2] = 1.2, [4] = 1.0, [8] = 1.1})[vec] or 1.5
  local t = 0.62 * (1 + 0.12 * (log2(block) - 9) ^ 2) * vec_cost
  if block >= 1024 and vec >= 8 then t = t * 1.35 end -- register pressure
  local names = {}
  for name in pairs(k) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    if name ~= "BLOCK" and name ~= "VEC" then t = t * (0.95 + 0.1 * hash(name .. "=" .. tostring(k[name]))) end
  end
  local speed = tonumber(src:match("kevo%-model: speed=([%d.]+)"))
  if speed and speed > 0 then t = t / speed end
  t = t * (0.99 + 0.02 * hash(src)) -- a little source-dependent wiggle
  local floor_ms = 0.45
  return {verdict = "ok", ms = t, ref_ms = 1.0, roofline_pct = 100 * floor_ms / t,
          registers = 16 + 6 * vec + block // 64}
end
