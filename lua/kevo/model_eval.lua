-- kevo.model_eval: the model evaluator (search.model_evaluator, split from kevo.search): a
-- testing and teaching aid, never the default. A model is a Lua
-- function(candidate, task) -> a small result table that computes a synthetic outcome from the
-- knobs and source (examples/cost_model.lua). `kevo run` uses one when KEVO_EVALUATOR is
-- model:<file>; every result it gives says synthetic = true, and so does the run's summary.
local M = {}

local STAGE_OF = {ok = "done", compile_error = "compile", launch_error = "verify",
                  wrong = "verify", unwritten = "verify", nondeterministic = "verify",
                  input_modified = "verify", crash = "verify", timeout = "verify",
                  implausible = "bench", no_gpu = "verify", error = "compile",
                  not_evaluated = "compile"}

-- Shapes a model's answer {verdict=, message=, feedback=, ms=, ref_ms=, registers=,
-- roofline_pct=, worst=} into an evaluation result (docs/architecture.md).
function M.shape_result(r)
  if type(r) ~= "table" then r = {verdict = "error", message = "model returned " .. type(r)} end
  local verdict = r.verdict or (r.ms and "ok") or "error"
  local res =
    {ok = verdict == "ok", verdict = verdict, stage = r.stage or STAGE_OF[verdict] or "done",
               message = r.message or verdict, synthetic = true,
               compile = {ms = 0, cached = false, arch = "model", diagnostics = {},
                          kernels = {{name = "model", registers = r.registers or 32,
                                      shared_static = 0, local_bytes = 0,
                                      spill_stores = 0, spill_loads = 0}}}}
  if verdict == "ok" then
    local ms, ref = r.ms, r.ref_ms or r.ms
    res.bench = {median_ms = ms, min_ms = ms, p10_ms = ms, p90_ms = ms, rse = 0, reps = 1,
                 ref_median_ms = ref, speedup = ref / ms, roofline_pct = r.roofline_pct}
    res.feedback = r.feedback or
      string.format("verified; %.4f ms, %.2fx the reference", ms, ref / ms)
  else
    if r.worst then res.verify = {trials = 1, mismatches = 1, worst = r.worst} end
    res.feedback = r.feedback or res.message
  end
  return res
end

-- evaluate_many(list [, ask]): ask.start_by (kevo.clock's seconds): a candidate not started
-- by then is not evaluated (verdict not_evaluated), as the GPU evaluator does.
function M.evaluator(model, task)
  if type(model) ~= "function" then error("search.model_evaluator: a function expected", 2) end
  return {
    model = true,
    evaluate_many = function(list, ask)
      local out = {}
      local start_by = ask and ask.start_by
      local clock = start_by and require("kevo").clock
      for i, c in ipairs(list) do
        local ok, r
        if start_by and clock() >= start_by then
          ok, r = true, {verdict = "not_evaluated",
                         message = "not evaluated: the run's time ran out before it was started"}
        else
          ok, r = pcall(model, c, task)
        end
        if not ok then r = {verdict = "error", message = "model: " .. tostring(r)} end
        out[i] = M.shape_result(r)
      end
      return out
    end,
  }
end

return M
