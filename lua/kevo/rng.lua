-- kevo.rng: a seeded generator (xoshiro256**, seeded by splitmix64), independent of
-- math.random, so the driver and the strategy draw from their own streams and a run replays
-- exactly. rng.new(seed) -> generator with :next64(), :random() in [0, 1), :int(m, n),
-- :pick(list), :shuffle(list), :fork(label).
local M = {}
local Rng = {}
Rng.__index = Rng

local function rotl(x, k)
  return (x << k) | (x >> (64 - k))
end

local function splitmix(state)
  state = state + 0x9e3779b97f4a7c15
  local z = state
  z = (z ~ (z >> 30)) * 0xbf58476d1ce4e5b9
  z = (z ~ (z >> 27)) * 0x94d049bb133111eb
  return state, z ~ (z >> 31)
end

local function str_hash(s)
  local h = 0xcbf29ce484222325 -- FNV-1a
  for i = 1, #s do h = (h ~ s:byte(i)) * 0x100000001b3 end
  return h
end

function M.new(seed)
  local x = math.tointeger(seed) or str_hash(tostring(seed))
  local s = {}
  for i = 1, 4 do x, s[i] = splitmix(x) end
  return setmetatable({s = s, seed = seed}, Rng)
end

function Rng:next64()
  local s = self.s
  local result = rotl(s[2] * 5, 7) * 9
  local t = s[2] << 17
  s[3] = s[3] ~ s[1]
  s[4] = s[4] ~ s[2]
  s[2] = s[2] ~ s[3]
  s[1] = s[1] ~ s[4]
  s[3] = s[3] ~ t
  s[4] = rotl(s[4], 45)
  return result
end

-- A float in [0, 1).
function Rng:random()
  return (self:next64() >> 11) * (1.0 / 9007199254740992.0)
end

-- An integer in [m, n].
function Rng:int(m, n)
  if n < m then error("rng:int: empty interval [" .. m .. ", " .. n .. "]", 2) end
  return m + math.floor(self:random() * (n - m + 1))
end

function Rng:pick(list)
  if #list == 0 then return nil end
  return list[self:int(1, #list)]
end

-- Shuffles list in place (Fisher-Yates) and returns it.
function Rng:shuffle(list)
  for i = #list, 2, -1 do
    local j = self:int(1, i)
    list[i], list[j] = list[j], list[i]
  end
  return list
end

-- A new generator derived from this one's seed and a label: parts of a composed search get
-- their own streams, so adding a part does not shift another's draws.
function Rng:fork(label)
  return M.new(str_hash(tostring(self.seed) .. "/" .. tostring(label)))
end

-- The generator's state as plain data ({seed =, s = {4 hex strings}}) and back: the strategy
-- process sends its generators with each ctx call, so the host draws from the same streams.
function M.is_rng(x)
  return getmetatable(x) == Rng
end

function M.state(r)
  local s = r.s
  return {seed = r.seed, s = {string.format("%x", s[1]), string.format("%x", s[2]),
                              string.format("%x", s[3]), string.format("%x", s[4])}}
end

-- Sets r's state from M.state's form (a new generator when r is nil); nil for a malformed one.
function M.restore(r, st)
  if type(st) ~= "table" or type(st.s) ~= "table" then return nil end
  local s = {}
  for i = 1, 4 do
    local h = st.s[i]
    s[i] = type(h) == "string" and #h <= 16 and h:match("^%x+$") and tonumber(h, 16) or nil
    if not s[i] then return nil end
  end
  local seed = st.seed
  if type(seed) ~= "number" and type(seed) ~= "string" then return nil end
  if r then
    r.s = s
    return r
  end
  return setmetatable({s = s, seed = seed}, Rng)
end

return M
