-- escape: require every kevo module by name; only the strategy's own may load, and none of
-- them reaches outside the process
-- exit: 0
-- want: modules checked
local allowed = {["kevo"] = true, ["kevo.sys"] = true, ["kevo.json"] = true, ["kevo.rng"] = true,
                 ["kevo.searchutil"] = true, ["kevo.search"] = true, ["kevo.remote"] = true,
                 ["kevo.strategy"] = true, ["kevo.strategy_core"] = true}
return {name = "e06", run = function(ctx)
  local n = 0
  for name in ("@MODULES@"):gmatch("%S+") do
    local ok, m = pcall(require, name)
    if ok and not allowed[name] then error("ESCAPED: require " .. name) end
    if not ok and allowed[name] then
      error("allowed module " .. name .. " failed: " .. tostring(m))
    end
    n = n + 1
  end
  if n < 20 then error("too few modules listed: " .. n) end
  -- the process's kevo.search has no context constructor and no host objects
  local search = require "kevo.search"
  if pcall(search.new, {evaluator = {evaluate_many = function() end}}) then
    error("ESCAPED: search.new")
  end
  ctx:log("modules checked: %d", n)
  ctx:evaluate(ctx:seed_candidates()) -- and the search goes on as usual
end}
