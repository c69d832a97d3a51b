-- escape: load a C library with package.loadlib, or through package.loaded / cpath
-- exit: 0
-- want: no package
return {name = "e04", run = function(ctx)
  for _, name in ipairs({"package", "loadlib"}) do
    local ok, v = pcall(function() return _G[name] end)
    if ok and v ~= nil then error("ESCAPED: global " .. name) end
  end
  local ok = pcall(require, "package")
  if ok then error("ESCAPED: require package") end
  ctx:log("no package")
  ctx:evaluate(ctx:seed_candidates()) -- and the search goes on as usual
end}
