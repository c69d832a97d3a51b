-- kevo.llm.anthropic: the Anthropic Messages wire format. Pure data in, data out.
local M = {}

M.finish = {end_turn = "stop", stop_sequence = "stop", max_tokens = "length",
            tool_use = "tool", pause_turn = "stop", refusal = "error"}

-- The Messages API takes system text apart from the turns and needs max_tokens; it has no n
-- (n samples are n requests).
function M.build(cfg, req)
  local system, messages = {}, {}
  for _, m in ipairs(req.messages) do
    if m.role == "system" then
      system[#system + 1] = m.content
    else
      messages[#messages + 1] = {role = m.role, content = m.content}
    end
  end
  local body = {model = req.model, messages = messages, max_tokens = req.max_tokens or 4096}
  if #system > 0 then body.system = table.concat(system, "\n\n") end
  if req.temperature then body.temperature = req.temperature end
  if req.top_p then body.top_p = req.top_p end
  if req.stop then body.stop_sequences = type(req.stop) == "string" and {req.stop} or req.stop end
  local auth
  if cfg.key_env then auth = {header = "x-api-key", prefix = "", env = cfg.key_env} end
  local base = cfg.base_url
  local url = base:match("/v1$") and (base .. "/messages") or (base .. "/v1/messages")
  return {url = url, body = body, auth = auth,
          headers = {["Content-Type"] = "application/json",
                     ["anthropic-version"] = "2023-06-01"}}
end

local function count(v) return math.type(v) and v or 0 end

function M.usage(doc)
  local u = type(doc) == "table" and doc.usage
  if type(u) ~= "table" or not math.type(u.input_tokens) then return nil end
  -- Cached prompt tokens are input too: the budget counts what the model read.
  local input = u.input_tokens + count(u.cache_read_input_tokens)
      + count(u.cache_creation_input_tokens)
  return input, math.type(u.output_tokens) and u.output_tokens or nil
end

function M.parse(doc)
  if type(doc) ~= "table" or type(doc.content) ~= "table" then
    return nil, "no content in the reply"
  end
  local parts = {}
  for _, b in ipairs(doc.content) do
    if type(b) == "table" and b.type == "text" and type(b.text) == "string" then
      parts[#parts + 1] = b.text
    end
  end
  local raw = type(doc.stop_reason) == "string" and doc.stop_reason or nil
  local input, output = M.usage(doc)
  return {replies = {{text = table.concat(parts), finish = raw and (M.finish[raw] or "error")
                      or "stop", raw_finish = raw, index = 1}},
          input_tokens = input, output_tokens = output,
          model = type(doc.model) == "string" and doc.model or nil}
end

function M.error_info(doc)
  local e = type(doc) == "table" and doc.error
  if type(e) ~= "table" then return {} end
  return {type = tostring(e.type or ""), code = tostring(e.type or ""),
          message = tostring(e.message or "")}
end

return M
