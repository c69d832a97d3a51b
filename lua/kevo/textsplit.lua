-- kevo.textsplit: a list split at its top-level separators (none inside brackets), for the
-- readers of source text: kevo.extract (CUDA and Triton in replies) and kevo new (C parameter
-- lists, its own option values). Data in, data out.
--   local ts = require "kevo.textsplit"
--   ts.top("a, f(b, c), d", ",", "([{")  -> {"a", " f(b, c)", " d"}
local M = {}

local CLOSE = {["("] = ")", ["["] = "]", ["{"] = "}", ["<"] = ">"}

-- The items of s between the separators `sep` that lie outside every bracket whose opener is in
-- `opens` ("([{" for Python, "(<[{" for C++ with templates), untrimmed, in order; one item
-- (s itself) when there is no separator.
function M.top(s, sep, opens)
  local closes = {}
  for o in opens:gmatch(".") do closes[CLOSE[o]] = true end
  local items, depth, start = {}, 0, 1
  for i = 1, #s do
    local c = s:sub(i, i)
    if opens:find(c, 1, true) then
      depth = depth + 1
    elseif closes[c] then
      depth = depth - 1
    elseif c == sep and depth == 0 then
      items[#items + 1] = s:sub(start, i - 1)
      start = i + 1
    end
  end
  items[#items + 1] = s:sub(start)
  return items
end

return M
