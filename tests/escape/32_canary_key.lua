-- escape: find the API key or reach the canary server by any module the process has
-- exit: 0
-- want: no key, no network
return {name = "e32", run = function(ctx)
  local found = {}
  local kevo = require "kevo"
  for k, v in pairs(kevo) do found[#found + 1] = k .. "=" .. tostring(v) end
  local sys = require "kevo.sys"
  for k, v in pairs(sys) do found[#found + 1] = k .. "=" .. tostring(v) end
  local all = table.concat(found, " ")
  if all:find("canary", 1, true) then error("ESCAPED: key") end
  for _, t in ipairs({ctx.task, ctx.seeds}) do
    local ok, text = pcall(require("kevo.json").encode, t)
    if ok and text:find("canary", 1, true) then error("ESCAPED: key in context") end
  end
  ctx:log("no key, no network")
  ctx:evaluate(ctx:seed_candidates()) -- and the search goes on as usual
end}
