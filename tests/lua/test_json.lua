local json = require "kevo.json"

local v = assert(json.decode('{"a": [1, 2.5, "x", null, true], "b": {"c": {}}}'))
assert(v.a[1] == 1 and math.type(v.a[1]) == "integer")
assert(v.a[2] == 2.5 and v.a[3] == "x" and v.a[4] == json.null and v.a[5] == true)
assert(type(v.b.c) == "table")

local back = assert(json.decode(json.encode(v)))
assert(back.a[3] == "x" and back.a[4] == json.null)
assert(json.encode({}) == "{}")
assert(json.encode(json.array()) == "[]")
assert(json.encode({1, 2, 3}) == "[1,2,3]")
assert(json.encode("q\"\n") == '"q\\"\\n"')

local ok, msg, code = json.decode("{bad")
assert(ok == nil and code == "E_PARSE" and msg:find("malformed JSON"), msg)

assert(not pcall(json.encode, {[{}] = 1}))
assert(not pcall(json.encode, print))
assert(not pcall(json.encode, 0 / 0))
local t = {}
t.self = t
assert(not pcall(json.encode, t))
assert(not pcall(json.encode, 1, {bogus = true}))
print("json ok")

-- canonical text: keys in byte order at every depth, whatever order the table was built in
local a = {zeta = 1, alpha = {y = 2, b = {3, 4}}, Mid = json.null}
local b = {}
b.Mid = json.null
b.alpha = {b = {3, 4}, y = 2}
b.zeta = 1
assert(json.encode(a, {canonical = true}) == '{"Mid":null,"alpha":{"b":[3,4],"y":2},"zeta":1}',
       json.encode(a, {canonical = true}))
assert(json.encode(a, {canonical = true}) == json.encode(b, {canonical = true}))
-- nesting past 200 levels is refused like any malformed text (and nothing is left behind)
do
  local v, msg, code = json.decode(string.rep("[", 250) .. string.rep("]", 250))
  assert(v == nil and code == "E_PARSE" and msg:find("nested too deep"), tostring(msg))
  assert(type(json.decode(string.rep("[", 200) .. string.rep("]", 200))) == "table")
end
print("canonical ok")
