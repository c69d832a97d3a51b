-- kevo.llm.openai: the OpenAI chat-completions wire format (OpenAI, OpenRouter, vLLM, SGLang,
-- Ollama and llama.cpp servers). Pure data in, data out: no I/O here.
local M = {}

M.finish = {stop = "stop", length = "length", tool_calls = "tool", function_call = "tool",
            content_filter = "error"}

-- Request for `req` (messages, model, n, temperature, max_tokens, stop, top_p, seed) under the
-- resolved config `cfg`. n is only sent when the server takes it (cfg.native_n).
function M.build(cfg, req)
  local body = {model = req.model, messages = req.messages}
  if req.temperature then body.temperature = req.temperature end
  if req.top_p then body.top_p = req.top_p end
  if req.stop then body.stop = req.stop end
  if req.seed then body.seed = req.seed end
  if req.max_tokens then body[cfg.max_tokens_field or "max_tokens"] = req.max_tokens end
  if req.n and req.n > 1 then body.n = req.n end
  local auth
  if cfg.key_env then auth = {header = "Authorization", prefix = "Bearer ", env = cfg.key_env} end
  return {url = cfg.base_url .. "/chat/completions", body = body, auth = auth,
          headers = {["Content-Type"] = "application/json"}}
end

local function count(v) return math.type(v) and v or nil end

function M.usage(doc)
  local u = type(doc) == "table" and doc.usage
  if type(u) ~= "table" then return nil end
  return count(u.prompt_tokens), count(u.completion_tokens)
end

-- Replies from a decoded 2xx body, or nil, why (the body does not have the expected shape).
function M.parse(doc)
  if type(doc) ~= "table" or type(doc.choices) ~= "table" or #doc.choices == 0 then
    return nil, "no choices in the reply"
  end
  local replies = {}
  for i, ch in ipairs(doc.choices) do
    local msg = type(ch) == "table" and ch.message
    if type(msg) ~= "table" then return nil, "choice " .. i .. " has no message" end
    local text = msg.content
    if type(text) == "table" then -- content parts
      local parts = {}
      for _, p in ipairs(text) do
        if type(p) == "table" and type(p.text) == "string" then parts[#parts + 1] = p.text end
      end
      text = table.concat(parts)
    elseif type(text) ~= "string" then
      text = ""
    end
    local raw = type(ch.finish_reason) == "string" and ch.finish_reason or nil
    local finish = raw and (M.finish[raw] or "error") or "stop"
    if type(msg.tool_calls) == "table" and #msg.tool_calls > 0 then finish = "tool" end
    replies[#replies + 1] = {text = text, finish = finish, raw_finish = raw,
                             index = (math.type(ch.index) and ch.index or i - 1) + 1}
  end
  table.sort(replies, function(a, b) return a.index < b.index end)
  local input, output = M.usage(doc)
  return {replies = replies, input_tokens = input, output_tokens = output,
          model = type(doc.model) == "string" and doc.model or nil}
end

-- {type, code, message} from an error body (decoded), tolerant of any shape.
function M.error_info(doc)
  local e = type(doc) == "table" and doc.error
  if type(e) == "string" then return {message = e} end
  if type(e) ~= "table" then return {} end
  return {type = tostring(e.type or ""), code = tostring(e.code or ""),
          message = tostring(e.message or "")}
end

return M
