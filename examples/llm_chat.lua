-- A multi-turn kernel-writing conversation with a language model.
--
--   kevo script examples/llm_chat.lua [provider:model] [turns]
--   kevo script --llm provider:model examples/llm_chat.lua
--
-- Works against any OpenAI-compatible server (OpenAI, OpenRouter, vLLM, SGLang, Ollama,
-- llama.cpp) or Anthropic: set `llm = provider:model` (and llm.base_url) in kevo.conf, or
-- KEVO_LLM / KEVO_LLM_BASE_URL / KEVO_LLM_KEY_ENV, or pass provider:model here. Each turn asks
-- for a kernel, pulls the code out of the reply, evaluates it where this build can
-- (kevo.evaluate), and sends the outcome back as feedback for the next turn.
local kevo = require "kevo"
local llm = require "kevo.llm"
local extract = require "kevo.extract"
local prompt = require "kevo.prompt"

local spec, turns = arg[1] ~= "" and arg[1] or nil, tonumber(arg[2] or "3")
local flags = spec and {llm = spec} or nil
local d = llm.doctor{probe = false, flags = flags}
if not (d.configured and d.model) then
  local why = d.error and
    not d.error:find("no model configured", 1, true) and (" (" .. d.error .. ")") or ""
  io.stderr:write("llm_chat: no language model is configured", why,
                  ". Name one:\n",
                  "  kevo script examples/llm_chat.lua openai:gpt-4.1     (provider:model here)\n",
                  "  kevo script --llm openai:gpt-4.1 examples/llm_chat.lua\n",
                  "  KEVO_LLM=openai:gpt-4.1, or llm = openai:gpt-4.1 in kevo.conf\n",
                  "and the key in its variable (OPENAI_API_KEY; llm.key_env); docs/llm.md, kevo "
                    .. "doctor\n")
  return 2
end
llm.configure{flags = flags}

local task = {
  name = "softmax",
  summary = "Row-wise softmax over the last axis: y[i, j] = exp(x[i, j] - max_j x[i, :]) / sum.",
  params = {M = 16384, N = 8192},
  shapes = {{M = 127, N = 1000}, {M = 1, N = 8193}},
  inputs = {x = {dtype = "f32", shape = {"M", "N"}}},
  outputs = {y = {dtype = "f32", shape = {"M", "N"}}},
  cost = {bytes = "2*M*N*4", flops = "5*M*N"},
  prompt = "Use one block per row for large N; keep the row in registers when it fits.",
}

-- Evaluates a candidate when this build has an evaluator; otherwise says so (the conversation
-- still goes on, with that as its feedback).
local function evaluate(c)
  if type(kevo.evaluate) ~= "function" then
    return {ok = false, verdict = "error", stage = "compile",
            message = "this build has no evaluator (kevo.evaluate); the code was not run"}
  end
  local ok, res, msg = pcall(kevo.evaluate, {lang = c.lang, source = c.source, launch = c.launch})
  if not ok then
    return {ok = false, verdict = "error", stage = "compile", message = tostring(res)}
  end
  return res or {ok = false, verdict = "error", stage = "compile", message = msg}
end

local messages = prompt.messages{task = task, lang = "cuda"}
local best, failures = nil, 0
for turn = 1, turns do
  local replies, msg = llm.generate{messages = messages, temperature = 0.7}
  if not replies then
    io.stderr:write("turn ", turn, ": ", msg, "\n")
    failures = failures + 1
    break
  end
  local reply = replies[1]
  messages[#messages + 1] = {role = "assistant", content = reply.text}
  local cands, why = extract.candidates(reply)
  local result
  if not cands then
    print(string.format("turn %d: no candidate (%s)", turn, why))
    result = {ok = false, verdict = "error", stage = "compile", message = why}
  else
    for i, c in ipairs(cands) do
      local names = {}
      for name in c.source:gmatch('extern%s+"C"%s+__global__%s+void%s+([%w_]+)') do
        names[#names + 1] = name
      end
      result = evaluate(c)
      c.result = result
      print(string.format("turn %d: candidate %d (%s, kernels %s, launch %s): %s", turn, i,
        c.lang, table.concat(names, ","), c.launch_from or "missing", result.verdict))
      if result.ok and (not best or (result.bench and best.result.bench
          and result.bench.median_ms < best.result.bench.median_ms)) then
        best = c
      end
    end
  end
  messages[#messages + 1] = {role = "user", content = prompt.followup{result = result, best = best}}
end
print(llm.usage_line())
return failures == 0 and 0 or 1
