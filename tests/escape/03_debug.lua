-- escape: reach the registry (and every loaded module) with debug
-- exit: 1
-- want: unknown global 'debug'
return {name = "e03", run = function(ctx)
  local reg = debug.getregistry()
  error("ESCAPED: " .. tostring(reg))
end}
