-- kevo.config: kevo.conf, then the environment, then flags; provider defaults; strict keys.
local config = require "kevo.config"

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p '" .. dir .. "'"))
local function write(text)
  local f = assert(io.open(dir .. "/kevo.conf", "w"))
  f:write(text)
  f:close()
end

-- defaults: OpenAI's own server takes n and max_completion_tokens
local c = assert(config.llm{dir = dir, env = {}})
assert(c.provider == "openai" and c.api == "openai" and c.model == false)
assert(c.base_url == "https://api.openai.com/v1" and c.key_env == "OPENAI_API_KEY")
assert(c.native_n == true and c.max_tokens_field == "max_completion_tokens")
assert(c.budget_tokens == 1000000 and c.budget_cost == false)

write([[
# a project
llm = ollama:qwen2.5-coder:32b
llm.budget_tokens = 50000   # tokens, in + out
llm.budget_cost = 2.5
llm.price.qwen2.5-coder:32b = 0.1 0.2
llm.cache = true
gpu.something = 1           # other subsystems' keys are not ours
]])
c = assert(config.llm{dir = dir, env = {}})
assert(c.provider == "ollama" and c.model == "qwen2.5-coder:32b", c.model)
assert(c.base_url == "http://127.0.0.1:11434/v1" and c.key_env == false)
assert(c.budget_tokens == 50000 and c.budget_cost == 2.5 and c.cache == true)
assert(c.prices["qwen2.5-coder:32b"].input == 0.1 and c.prices["qwen2.5-coder:32b"].output == 0.2)
assert(c.native_n == false and c.max_tokens_field == "max_tokens")
assert(c.source.llm == dir .. "/kevo.conf:2")

-- the environment beats the file, flags beat the environment
c = assert(config.llm{dir = dir, env = {KEVO_LLM = "anthropic:claude-x",
  KEVO_LLM_BASE_URL = "http://127.0.0.1:9/", KEVO_LLM_KEY_ENV = "MY_KEY"}})
assert(c.api == "anthropic" and c.model == "claude-x" and c.base_url == "http://127.0.0.1:9")
assert(c.key_env == "MY_KEY" and c.source.key_env == "$KEVO_LLM_KEY_ENV")
c = assert(config.llm{dir = dir, env = {KEVO_LLM = "anthropic:claude-x"},
  flags = {llm = "vllm:m", budget_tokens = "123"}})
assert(c.provider == "vllm" and c.model == "m" and c.budget_tokens == 123)
-- a custom base URL is a generic OpenAI-compatible server
c = assert(
  config.llm{dir = dir, env = {KEVO_LLM = "openai:gpt-x", KEVO_LLM_BASE_URL = "http://h/v1"}})
assert(c.native_n == false and c.max_tokens_field == "max_tokens")

-- errors name file:line and the key
write("llm.bogus = 1\n")
local ok, msg, code = config.llm{dir = dir, env = {}}
assert(not ok and code == "E_PARSE" and msg:find("kevo.conf:1") and msg:find("llm.bogus"), msg)
write("llm.budget_tokens = lots\n")
ok, msg = config.llm{dir = dir, env = {}}
assert(not ok and msg:find("must be a number"), msg)
write("this is not a setting\n")
ok, msg = config.llm{dir = dir, env = {}}
assert(not ok and msg:find("kevo.conf:1: expected"), msg)
write("llm.price.m = cheap\n")
ok, msg = config.llm{dir = dir, env = {}}
assert(not ok and msg:find("in $/Mtok", 1, true), msg)
ok, msg = config.llm{dir = dir, env = {KEVO_LLM = "nosuch:m"}, file = "/nonexistent"}
assert(not ok and msg:find("unknown LLM provider 'nosuch'"), msg)
assert(not pcall(config.llm, {bogus = 1}))

os.remove(dir .. "/kevo.conf")
os.remove(dir)
print("config ok")
