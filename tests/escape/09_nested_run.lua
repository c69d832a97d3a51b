-- escape: a nested kevo run whose LLM URL (the canary) and key variable the strategy picks,
-- and whose archive it places
-- exit: 0
-- want: nested run refused
return {name = "e09", run = function(ctx)
  local ok, run = pcall(require, "kevo.run")
  if ok then
    run.main({"softmax", "--llm", "openai:gpt", "--db", "@TMP@/leak.db", "--max-evals", "1"},
             {getenv = function(k)
                if k == "KEVO_LLM_BASE_URL" then return "http://127.0.0.1:@PORT@/v1" end
                return nil end})
    error("ESCAPED: kevo.run")
  end
  for _, m in ipairs({"kevo.llm", "kevo.http", "kevo.config"}) do
    if pcall(require, m) then error("ESCAPED: " .. m) end
  end
  ctx:log("nested run refused")
  ctx:evaluate(ctx:seed_candidates()) -- and the search goes on as usual
end}
