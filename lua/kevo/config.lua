-- kevo.config: the project's settings (kevo.conf in the project directory), overridden by the
-- environment and then by command-line flags. See docs/llm.md for the keys.
--
--   config.read(path)                 -> {key = {value=, line=}} | nil, msg, "E_PARSE"/"E_IO"
--   config.llm{dir=, file=, env=, flags=} -> resolved LLM settings | nil, msg, code
--   config.gpus{dir=, file=}          -> the `gpus` key's text (kevo run --gpus) | nil |
--                                        nil, msg, code
--
-- kevo.conf holds `key = value` lines; `#` starts a comment; values are numbers, true/false,
-- or text (quotes optional). Keys are dotted by subsystem ("llm.base_url"); a subsystem reads
-- only its own keys and rejects unknown ones. API keys never go in this file: it names the
-- variable that holds the key (llm.key_env), and only C reads that variable, at request time.
local M = {}

-- Built-in providers. `api` is the wire protocol; the other fields are defaults.
M.providers = {
  openai = {api = "openai", base_url = "https://api.openai.com/v1", key_env = "OPENAI_API_KEY",
            native_n = true, max_tokens_field = "max_completion_tokens"},
  openrouter = {api = "openai", base_url = "https://openrouter.ai/api/v1",
                key_env = "OPENROUTER_API_KEY"},
  vllm = {api = "openai", base_url = "http://127.0.0.1:8000/v1", key_env = "VLLM_API_KEY",
          native_n = true},
  sglang = {api = "openai", base_url = "http://127.0.0.1:30000/v1", native_n = true},
  ollama = {api = "openai", base_url = "http://127.0.0.1:11434/v1"},
  llamacpp = {api = "openai", base_url = "http://127.0.0.1:8080/v1"},
  anthropic = {api = "anthropic", base_url = "https://api.anthropic.com",
               key_env = "ANTHROPIC_API_KEY"},
}

-- Defaults for every llm.* key (seconds for times, tokens for budgets, US dollars for cost).
M.llm_defaults = {
  provider = "openai", model = false, base_url = false, key_env = false,
  budget_tokens = 1000000, budget_cost = false,
  concurrency = 8, connect_timeout = 10, timeout = 600, stall_timeout = 120,
  max_attempts = 6, backoff_base = 1, backoff_cap = 60, retry_after_cap = 300,
  max_body = 16 * 1024 * 1024, max_tokens = 4096, temperature = false,
  native_n = "auto", max_tokens_field = "auto", cache = false, log = true,
}

-- io and os exist in trusted states only; a sandbox raises on reading unknown globals.
local io, os = rawget(_G, "io"), rawget(_G, "os")

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

local function parse_value(v)
  if v == "true" then return true elseif v == "false" then return false end
  local q = v:match('^"(.*)"$') or v:match("^'(.*)'$")
  if q then return q end
  local n = tonumber(v)
  if n then return n end
  return v
end

-- Parses kevo.conf text; `name` is used in messages (name:line: what).
function M.parse(text, name)
  local out, lineno = {}, 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    lineno = lineno + 1
    local s = trim((line:gsub("%s#.*$", ""):gsub("^#.*$", "")))
    if s ~= "" then
      local k, v = s:match("^([%w_%.%-/:]+)%s*=%s*(.-)$")
      if not k then
        return nil, string.format("E_PARSE: %s:%d: expected `key = value`", name, lineno), "E_PARSE"
      end
      out[k] = {value = parse_value(v), line = lineno}
    end
  end
  return out
end

function M.read(path)
  if not io then return {} end -- sandboxed: the host passes settings in
  local f = io.open(path, "r")
  if not f then return nil, "E_IO: cannot read " .. path, "E_IO" end
  local text, why = f:read("a") -- a directory opens, then fails to read
  f:close()
  if not text then
    local dir = io.open(path .. "/")
    if dir then dir:close() why = "is not a regular file (a directory)" end
    return nil, ("E_IO: %s: %s"):format(path, why), "E_IO"
  end
  return M.parse(text, path)
end

local function file_exists(path)
  if not io then return false end
  local f = io.open(path, "r")
  if f then f:close() return true end
  return false
end

-- Splits "provider:model" at the first colon (model names may hold colons: "qwen2.5:32b").
function M.split_llm(spec)
  local p, m = spec:match("^([%w_%-]+):(.+)$")
  if not p then return nil, spec end
  return p, m
end

local KINDS = {
  provider = "string", model = "string", base_url = "string", key_env = "string",
  max_tokens_field = "string", budget_tokens = "number", budget_cost = "number",
  concurrency = "number", connect_timeout = "number", timeout = "number",
  stall_timeout = "number", max_attempts = "number", backoff_base = "number",
  backoff_cap = "number", retry_after_cap = "number", max_body = "number", max_tokens = "number",
  temperature = "number", native_n = "boolean", cache = "boolean", log = "boolean",
}

-- Checks (and coerces text from the environment or flags) one llm.* value.
local function coerce(key, v)
  local kind = KINDS[key]
  if not kind then return nil, "unknown key 'llm." .. key .. "'" end
  if kind == "number" and type(v) == "string" and tonumber(v) then v = tonumber(v) end
  if kind == "boolean" and (v == "true" or v == "false") then v = v == "true" end
  if type(v) ~= kind then
    return nil, string.format("llm.%s must be a %s, got %s", key, kind, type(v))
  end
  if kind == "number" and v < 0 then return nil, "llm." .. key .. " must not be negative" end
  return v
end

-- Resolves the LLM settings. opts: dir (project directory, default "."), file (default
-- dir/kevo.conf; read when it exists), env (a table standing in for the environment; default
-- os.getenv where it exists), flags (a table from the command line: llm=, base_url=, key_env=,
-- and any other llm key). Precedence: defaults < provider < file < environment < flags.
function M.llm(opts)
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "dir" and k ~= "file" and k ~= "env" and k ~= "flags" then
      error("config.llm: unknown option '" .. tostring(k) .. "'", 2)
    end
  end
  local getenv = opts.env and function(k) return opts.env[k] end or (os and os.getenv)
      or function() return nil end
  local c, src = {}, {}
  for k, v in pairs(M.llm_defaults) do c[k] = v end
  c.prices = {}

  local function put(key, v, where)
    if key == "llm" then
      local p, m = M.split_llm(tostring(v))
      if m == "" then return "llm must be provider:model (or a model name)" end
      if p then c.provider = p end
      c.model = m
      src.llm = where
      return nil
    end
    local price_model = key:match("^price%.(.+)$")
    if price_model then
      local i, o = tostring(v):match("^%s*([%d%.eE+-]+)%s+([%d%.eE+-]+)%s*$")
      if not i then return "llm.price." .. price_model .. " must be `input output` in $/Mtok" end
      c.prices[price_model] = {input = tonumber(i), output = tonumber(o)}
      return nil
    end
    local val, err = coerce(key, v)
    if err then return err end
    c[key] = val
    src[key] = where
  end

  local path = opts.file or ((opts.dir or ".") .. "/kevo.conf")
  if file_exists(path) then
    local t, msg, code = M.read(path)
    if not t then return nil, msg, code end
    for k, e in pairs(t) do
      local sub = k == "llm" and "llm" or k:match("^llm%.(.+)$")
      if sub then
        local err = put(sub, e.value, path .. ":" .. e.line)
        if err then
          return nil, string.format("E_PARSE: %s:%d: %s", path, e.line, err), "E_PARSE"
        end
      end
    end
  end
  local envmap = {KEVO_LLM = "llm", KEVO_LLM_BASE_URL = "base_url", KEVO_LLM_KEY_ENV = "key_env"}
  for var, key in pairs(envmap) do
    local v = getenv(var)
    if v and v ~= "" then
      local err = put(key, v, "$" .. var)
      if err then return nil, "E_PARSE: " .. err, "E_PARSE" end
    end
  end
  for k, v in pairs(opts.flags or {}) do
    local err = put(k, v, "--" .. k)
    if err then return nil, "E_PARSE: flag: " .. err, "E_PARSE" end
  end

  local p = M.providers[c.provider]
  if not p then
    local names = {}
    for n in pairs(M.providers) do names[#names + 1] = n end
    table.sort(names)
    return nil, string.format("E_PARSE: unknown LLM provider '%s' (known: %s)", c.provider,
      table.concat(names, ", ")), "E_PARSE"
  end
  c.api = p.api
  local own_server = not c.base_url or c.base_url == p.base_url
  c.base_url = (c.base_url or p.base_url):gsub("/+$", "")
  if not c.key_env then c.key_env = p.key_env or false end
  -- Server-specific behaviour only applies to the provider's own server: a custom base URL
  -- is a generic OpenAI-compatible server unless the file says otherwise.
  if c.native_n == "auto" then c.native_n = own_server and p.native_n or false end
  if c.max_tokens_field == "auto" then
    c.max_tokens_field = own_server and p.max_tokens_field or "max_tokens"
  end
  c.source = src
  return c
end

-- The `gpus = all | 0,2,3` key of kevo.conf (the GPUs kevo run and kevo suite spread their
-- evaluations over when --gpus is not given): its text, nil when absent, or nil, msg, code.
function M.gpus(opts)
  opts = opts or {}
  local path = opts.file or ((opts.dir or ".") .. "/kevo.conf")
  if not file_exists(path) then return nil end
  local t, msg, code = M.read(path)
  if not t then return nil, msg, code end
  local e = t.gpus
  if not e then return nil end
  local v = tostring(e.value)
  if type(e.value) == "number" then v = tostring(math.tointeger(e.value) or e.value) end
  return v
end

return M
