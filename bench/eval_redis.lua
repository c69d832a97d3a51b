-- Judging throughput of one evaluator configuration (bench/eval_redis.sh runs it four ways):
-- N distinct variants of a recipe's CUDA seed (a SALT define each), judged once to fill the
-- compile cache, then judged again, timed: compiles are cached, so what is measured is the
-- workers' verify + bench and the transport to them. Racing is off: every candidate is timed
-- in full, the same work whatever the transport.
-- usage: kevo script bench/eval_redis.lua RECIPE N gpus=SPEC | eval=URL
-- prints: EVAL_REDIS label=... n=N seconds=S per_s=R workers=W verdicts=...
local evaluator = require "kevo.evaluator"
local kevo = require "kevo"

local recipe, n, how = arg[1], tonumber(arg[2] or 24), arg[3] or "gpus=0"
local key, val = how:match("^(%w+)=(.+)$")
assert(key == "gpus" or key == "eval", "the third argument is gpus=SPEC or eval=URL")
local opts = {recipe = recipe, race = false}
opts[key] = val
local ev, err = evaluator.new(opts)
if not ev then io.stderr:write("eval_redis: ", tostring(err), "\n") os.exit(1) end
local dev, derr = ev:device()
if not dev then io.stderr:write("eval_redis: ", tostring(derr), "\n") os.exit(77) end

local seed
for _, s in ipairs(ev:recipe().seeds) do if s.lang == "cuda" then seed = s break end end
assert(seed, "the recipe has no CUDA seed")
local first = {}
for k, vals in pairs(seed.space or {}) do first[k] = vals[1] end
local salt = string.format("%d", os.time())
local list = {}
for i = 1, n do
  local knobs = {SALT = salt .. i}
  for k, v in pairs(first) do knobs[k] = v end
  list[i] = {source = seed.source, knobs = knobs, launch = seed.launch,
             launch_name = seed.launch_name, launch_line = seed.launch_line}
end
ev:evaluate_many(list) -- compiles (cached for the timed batch) and starts every worker
local t0 = kevo.clock()
local res = ev:evaluate_many(list)
local t = kevo.clock() - t0
local verdicts = {}
for _, r in ipairs(res) do verdicts[r.verdict] = (verdicts[r.verdict] or 0) + 1 end
local vl = {}
for v, c in pairs(verdicts) do vl[#vl + 1] = v .. ":" .. c end
table.sort(vl)
print(string.format("EVAL_REDIS label=%s n=%d seconds=%.3f per_s=%.2f workers=%d verdicts=%s",
                    key == "eval" and "redis" or ("local:" .. val), n, t, n / t,
                    ev:stats().workers or 1, table.concat(vl, ",")))
ev:close()
