-- escape: open a file for writing with io
-- exit: 1
-- want: unknown global 'io'
return {name = "e01", run = function(ctx)
  local f = io.open("@TMP@/leak", "w")
  f:write("x")
end}
