-- The reply corpus (tests/replies): replies in the styles language models write, taken through
-- what `kevo run` does with a reply: kevo.extract picks the candidate, the evaluator compiles it
-- for real (NVRTC; Triton when kevo finds it) and resolves its launch on every shape, and a
-- stand-in worker (tests/integration/fake_worker.py) answers for the GPU. Each case must either
-- reach the worker or give the model feedback that names what to fix (tests/replies/cases.lua).
-- Prints one line per case and the share that reaches the GPU at the first try.
-- KEVO_REPLIES_MEASURE=1: print only, never fail (bench/replies_first_try.sh: any kevo binary).

-- Run with a compile cache of our own, so the test neither reads nor fills the user's.
if not os.getenv("KEVO_CACHE") then
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p '" .. dir .. "'"))
  local ok, how, code = os.execute(string.format("KEVO_CACHE='%s' '%s' script '%s'", dir,
    assert(os.getenv("KEVO"), "KEVO is not set"), arg[0]))
  os.execute("rm -rf '" .. dir .. "'")
  if not ok then os.exit(code == 77 and 77 or 1) end
  return
end

local evaluator = require "kevo.evaluator"
local extract = require "kevo.extract"
local prompt = require "kevo.prompt"
local okt, triton = pcall(require, "kevo.triton")

local src = assert(os.getenv("KEVO_SRC"), "KEVO_SRC is not set (run under ctest)")
local measure = os.getenv("KEVO_REPLIES_MEASURE") == "1"
local dir = src .. "/tests/replies/"
local cases = dofile(dir .. "cases.lua")
local worker = "python3 " .. src .. "/tests/integration/fake_worker.py ok"
local have_triton, why_triton = false, "kevo.triton is missing"
if okt then have_triton, why_triton = triton.available() end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- The candidate kevo run takes from a reply, or nil and the text the model is told.
local function take(reply, lang)
  if extract.best then return extract.best(reply, lang) end
  -- kevo before extract.best: the first candidate in the language asked for, else the first;
  -- a reply with none was dropped with a log line, and the model was told nothing
  local cands, why = extract.candidates(reply)
  local pick
  for _, c in ipairs(cands or {}) do
    if not pick and c.lang == lang then pick = c end
  end
  pick = pick or (cands and cands[1])
  if pick then return pick end
  return nil, "(nothing: the reply was dropped; log: " .. tostring(why) .. ")"
end

local evaluators = {}
local function evaluator_for(recipe)
  if not evaluators[recipe] then
    evaluators[recipe] = assert(evaluator.new{recipe = src .. "/recipes/" .. recipe .. ".yaml",
                                              worker = worker, deadline_s = 60})
  end
  return evaluators[recipe]
end

local fails, counted, reached, compiled, skipped = 0, 0, 0, 0, 0
for _, c in ipairs(cases) do
  local lang = c.lang or "cuda"
  local text = read(dir .. c.file)
  local reply = c.truncated and {text = text, truncated = true, finish = "length"} or
                {text = text, finish = "stop"}
  local cand, said = take(reply, lang)
  local outcome, feedback, res
  if cand and cand.lang == "triton" and not have_triton then
    outcome = "skipped"
  elseif cand then
    res = evaluator_for(c.recipe):evaluate{lang = cand.lang, source = cand.source,
                                           launch = cand.launch}
    feedback = prompt.feedback(res)
    outcome = res.verdict == "ok" and "launch" or "feedback"
    -- the stand-in worker launches nothing: a module with no kernel in it (a template never
    -- instantiated) would fail on a GPU, so it does not count as reaching it
    if outcome == "launch" and not (res.compile and res.compile.kernels and
                                    #res.compile.kernels > 0) then
      outcome = "no kernel"
    end
  else
    outcome, feedback = "feedback", said
  end
  local problem
  if outcome == "skipped" then
    skipped = skipped + 1
  else
    counted = counted + 1
    if outcome == "launch" then reached = reached + 1 end
    if res and res.compile and res.compile.kernels and #res.compile.kernels > 0 then
      compiled = compiled + 1
    end
    if outcome ~= c.want then
      problem = string.format("wanted %s, got %s", c.want, outcome)
    elseif c.want == "feedback" then
      for _, s in ipairs(c.says or {}) do
        if not tostring(feedback):find(s, 1, true) then
          problem = (problem and problem .. "; " or "") .. "feedback lacks '" .. s .. "'"
        end
      end
    end
    if not problem and c.source_has and not cand.source:find(c.source_has, 1, true) then
      problem = "the candidate taken is not the one meant (no '" .. c.source_has .. "')"
    end
  end
  local detail = res and (res.verdict .. (res.verdict ~= "ok" and (": " .. tostring(res.message))
                                          or "")) or tostring(said or why_triton)
  print(string.format("%-4s %-44s %-8s %s", problem and "FAIL" or "ok", c.file, outcome,
                      detail:gsub("\n.*", ""):sub(1, 150)))
  if problem then
    print("     " .. problem)
    if not measure then print(("     | " .. tostring(feedback)):gsub("\n", "\n     | ")) end
    fails = fails + 1
  end
end

print(string.format("replies: %d; reach the GPU at the first try: %d of %d (%.0f%%); "
  .. "compile at the first try: %d of %d (%.0f%%)%s", #cases, reached, counted,
  100 * reached / counted, compiled, counted, 100 * compiled / counted,
  skipped > 0 and string.format("; %d Triton replies skipped (%s)", skipped, why_triton) or ""))
if skipped > 0 then
  io.stderr:write("SKIPPED in part: Triton is not available to kevo (", tostring(why_triton),
                  "); set KEVO_PYTHON to a python3 with triton\n")
end
for _, ev in pairs(evaluators) do ev:close() end
if fails > 0 and not measure then error(fails .. " of " .. #cases .. " replies failed", 0) end
