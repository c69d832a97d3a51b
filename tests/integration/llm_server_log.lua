-- Checks, from the loopback server's log, that examples/llm_chat.lua held a real multi-turn
-- conversation: each request carries the previous replies and the feedback on them.
local http = require "kevo.http"
local json = require "kevo.json"
local c = assert(http.client{})
local res = c:request_many{{url = arg[1] .. "/_log"}}
local turns = {}
for _, e in ipairs(assert(json.decode(res[1].body))) do
  if e.model == "chat/kernel" then turns[#turns + 1] = json.decode(e.body) end
end
assert(#turns == 3, "expected 3 requests, got " .. #turns)
for i, t in ipairs(turns) do
  assert(#t.messages == 2 * i, "turn " .. i .. " has " .. #t.messages .. " messages")
  assert(t.messages[1].role == "system" and t.messages[1].content:find("kevo:launch", 1, true))
end
local last = turns[3].messages
assert(last[3].role == "assistant" and last[3].content:find("softmax_rows", 1, true))
assert(last[4].role == "user" and last[4].content:find("Result:", 1, true), last[4].content)
assert(turns[1].messages[2].content:find("Operator: softmax", 1, true))
print("conversation ok")
