-- cost_model.lua: a synthetic evaluator for teaching and testing (never the default).
--
--   KEVO_EVALUATOR=model:examples/cost_model.lua kevo run softmax --max-evals 40
--
-- kevo calls the returned function with each candidate {lang, source, launch, knobs} and the
-- task, and turns the small table it returns into an evaluation result marked synthetic. No GPU,
-- no compiler: the "time" is a made-up but non-trivial function of the knobs and the source, so
-- a strategy can be watched (and tested) making choices. Runs in the sandbox: pure Lua.
-- KEVO_MODEL_DELAY=SECONDS makes kevo run wait that long per candidate before calling it, as
-- a real compile and benchmark would take time (tests that kill a run mid-evaluation).
-- It gives a surface on every packaged recipe (tests/lua/test_cost_model.lua checks them all).
--
-- The surface: a reference at 1.0 ms, the best point near 0.62 ms.
--  - CUDA: BLOCK (threads) best at 512, quadratic in log2; VEC best at 4; too many registers
--    when BLOCK >= 1024 and VEC >= 8.
--  - Triton: BLOCK (elements per program) best at 2048, quadratic in log2; num_warps best at 8.
--  - Any other numeric knob: a bowl in log2 around a point its name picks (a hash), a few per
--    cent per step; a knob that is not a positive number moves the time by a hash of its value.
-- Sources may carry `kevo-model: speed=F` (the loopback LLM server writes it into its
-- rewrites): the time is divided by F. Failures, as a real evaluator gives them: an `#error`
-- line outside any `#if` block is a compile error, in either language (guarded ones, which the
-- packaged CUDA seeds carry to check their knobs, are not: the model evaluates no conditions);
-- `kevo-model: wrong` and
-- CUDA BLOCK*VEC above 8192 are wrong results (with a worst element); a block of more than 1024
-- threads (CUDA's BLOCK, Triton's num_warps * 32) cannot launch.

-- Run directly (kevo script examples/cost_model.lua), it says what it is: the model kevo run
-- evaluates with (where it is loaded there is no `arg`, so this is skipped).
local script_arg = rawget(_G, "arg")
if script_arg and type(script_arg[0]) == "string"
   and ("/" .. script_arg[0]):match("/cost_model%.lua$") then
  io.stderr:write(script_arg[0], " is a model for the model evaluator, not a script: kevo run ",
                  "uses it in place of a GPU, e.g.\n",
                  "  KEVO_EVALUATOR=model:", script_arg[0], " kevo run softmax --max-evals 40\n",
                  "  (kevo script examples/walkthrough.lua uses it too; docs/strategies.md)\n")
  return 2
end

local function hash(s) -- FNV-1a, folded to [0, 1)
  local h = 0xcbf29ce484222325
  for i = 1, #s do h = (h ~ s:byte(i)) * 0x100000001b3 end
  return ((h >> 11) % 1000003) / 1000003
end

local function log2(x) return math.log(x, 2) end

-- The line of the first #error that no #if/#ifdef/#ifndef encloses, or nil.
local function unguarded_error(src)
  local depth, line = 0, 0
  for text in (src .. "\n"):gmatch("([^\n]*)\n") do
    line = line + 1
    local d = text:match("^%s*#%s*(%a+)")
    if d == "if" or d == "ifdef" or d == "ifndef" then
      depth = depth + 1
    elseif d == "endif" then
      depth = math.max(0, depth - 1)
    elseif d == "error" and depth == 0 then
      return line
    end
  end
  return nil
end

-- Knobs whose place on the surface is set above; the others get a bowl of their own.
local SHAPED = {cuda = {BLOCK = true, VEC = true}, triton = {BLOCK = true, num_warps = true}}

return function(c, task)
  local src, k = c.source, c.knobs or {}
  local lang = c.lang == "triton" and "triton" or "cuda"
  local line = unguarded_error(src)
  if line then
    return {verdict = "compile_error", message = "compile error at line " .. line,
            feedback = "kernel.cu(" .. line .. "): error: #error directive"}
  end
  local block = tonumber(k.BLOCK) or (lang == "cuda" and 256 or 1024)
  local vec = tonumber(k.VEC) or 1
  local warps = tonumber(k.num_warps) or 4
  local threads = lang == "cuda" and block or warps * 32
  if threads > 1024 then
    return {verdict = "launch_error", message = "block of " .. threads .. " threads exceeds 1024"}
  end
  if src:find("kevo%-model: wrong") or (lang == "cuda" and block * vec > 8192) then
    return {verdict = "wrong", message = "y[3, 17]: expected 0.125, got 0.25",
            worst = {shape = "M=127,N=1000", tensor = "y", index = {3, 17}, expected = 0.125,
                     actual = 0.25, abs_err = 0.125, rel_err = 1.0}}
  end
  local t
  if lang == "cuda" then
    local vec_cost = ({[1] = 1.6, [2] = 1.2, [4] = 1.0, [8] = 1.1})[vec] or 1.5
    t = 0.62 * (1 + 0.12 * (log2(block) - 9) ^ 2) * vec_cost
    if block >= 1024 and vec >= 8 then t = t * 1.35 end -- register pressure
  else
    t = 0.62 * (1 + 0.08 * (log2(block) - 11) ^ 2) * (1 + 0.1 * (log2(warps) - 3) ^ 2)
  end
  local names = {}
  for name in pairs(k) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    if not SHAPED[lang][name] then
      local v = tonumber(k[name])
      if v and v > 0 then
        local best = 1 + 5 * hash(name) -- somewhere between 2 and 64
        t = t * (1 + 0.04 * (log2(v) - best) ^ 2)
      else
        t = t * (0.95 + 0.1 * hash(name .. "=" .. tostring(k[name])))
      end
    end
  end
  local speed = tonumber(src:match("kevo%-model: speed=([%d.]+)"))
  if speed and speed > 0 then t = t / speed end
  t = t * (0.99 + 0.02 * hash(src)) -- a little source-dependent wiggle
  local floor_ms = 0.45
  return {verdict = "ok", ms = t, ref_ms = 1.0, roofline_pct = 100 * floor_ms / t,
          registers = 16 + 6 * vec + block // 64}
end
