-- kevo.export.plan: finds a source's launch chunk text, recorded in launch.json. The plans
-- themselves are resolved by the evaluator (ev:plans, runtime/launch.c), in its sandbox.
local M = {}

-- chunk_of(source, lang): the kevo:launch block a source carries, or nil.
function M.chunk_of(source, lang)
  local block = source:match("/%*%s*kevo:launch%s*\n(.-)%*/")
  if block then return block end
  if lang == "triton" then
    block = source:match("'''%s*kevo:launch%s*\n(.-)'''") or
      source:match('"""%s*kevo:launch%s*\n(.-)"""')
    if block then return block end
    local lines, on = {}, false
    for line in (source .. "\n"):gmatch("(.-)\n") do
      if line:match("^%s*#%s*kevo:launch%s*$") then on = true
      elseif on then
        local body = line:match("^%s*#%s?(.*)$")
        if not body then break end
        lines[#lines + 1] = body
      end
    end
    if #lines > 0 then return table.concat(lines, "\n") end
  end
  return nil
end

return M
