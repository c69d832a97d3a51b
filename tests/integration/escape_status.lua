-- escape_status.lua DB: the status of the archive's runs ("none" when the strategy never got
-- to make one), and "error: ..." when the archive does not open or fails its integrity check.
local archive = require "kevo.archive"
local path = arg and arg[1] or ...
local db, err = archive.open(path, {readonly = true})
if not db then
  local f = io.open(path, "rb")
  if not f then print("none") return end
  f:close()
  print("error: " .. tostring(err))
  return
end
local out = {}
for _, r in ipairs(db:runs()) do out[#out + 1] = r.status end
print(#out > 0 and table.concat(out, ",") or "none")
db:close()
