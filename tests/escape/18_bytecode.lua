-- escape: load bytecode (string.dump, a binary chunk, mode "b")
-- exit: 0
-- want: bytecode refused
return {name = "e18", run = function(ctx)
  if string.dump ~= nil then error("ESCAPED: string.dump") end
  local f,
    err =
    load("\27Lua\84\0\25\147\13\10\26\10\4\8\8\120\86\0\0\0\0\0\0\0\0\0\0\0\40\119\64\1", "x", "b")
  if f then error("ESCAPED: binary chunk loaded") end
  local g = load("return 1", "x", "b")
  if g and g() ~= 1 then error("odd") end
  if pcall(function() return ("").dump end) and ("").dump then
    error("ESCAPED: dump via metatable")
  end
  ctx:log("bytecode refused (%s)", tostring(err))
  ctx:evaluate(ctx:seed_candidates()) -- and the search goes on as usual
end}
