-- escape: _ENV and global-table tricks (rawget, metatables, a fresh _ENV, load with an env)
-- exit: 0
-- want: env tricks found nothing
return {name = "e19", run = function(ctx)
  for _, k in ipairs({"io", "os", "debug", "package", "collectgarbage", "dofile", "loadfile"}) do
    if rawget(_G, k) ~= nil then error("ESCAPED: _G." .. k) end
  end
  if pcall(setmetatable, _G, nil) then error("ESCAPED: replaced the globals' metatable") end
  local mt = getmetatable(_G)
  local f = load("return io or os or debug", "x", "t", setmetatable({}, {__index = _G}))
  local ok, v = pcall(f)
  if ok and v then error("ESCAPED: load env") end
  do
    local _ENV = {print = print}
    if io or os then error("ESCAPED: _ENV") end
  end
  ctx:log("env tricks found nothing (%s)", tostring(mt))
  ctx:evaluate(ctx:seed_candidates()) -- and the search goes on as usual
end}
