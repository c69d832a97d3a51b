-- escape: run a shell command and read the key with os
-- exit: 1
-- want: unknown global 'os'
return {name = "e02", run = function(ctx)
  os.execute("touch @TMP@/leak")
  error("ESCAPED: " .. tostring(os.getenv("OPENAI_API_KEY")))
end}
