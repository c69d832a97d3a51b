-- escape: require the standard libraries a strategy is not given, and C modules by name
-- exit: 0
-- want: stdlib refused
return {name = "e05", run = function(ctx)
  for _, name in ipairs({"io", "os", "debug", "package", "ffi", "socket", "lfs", "posix",
                         "_G", "string.dump", "/etc/passwd", "../kevo", "kevo.", ".kevo"}) do
    local ok, m = pcall(require, name)
    if ok then error("ESCAPED: require " .. name .. " gave " .. tostring(m)) end
  end
  ctx:log("stdlib refused")
  ctx:evaluate(ctx:seed_candidates()) -- and the search goes on as usual
end}
