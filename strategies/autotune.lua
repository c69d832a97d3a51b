-- autotune: tunes template knobs: exhaustive when the space is small, else simulated annealing or
-- random sampling
--
-- Options (kevo run --set KEY=VALUE):
--   method      "auto" (default): exhaustive when a space has at most `exhaustive_max` points
--               and fits in its share of the eval budget, else "anneal" (which starts from the
--               seed's own knob defaults); or force "exhaustive", "anneal" or "random"
--   exhaustive_max  largest space searched exhaustively (default 64)
--   samples     evaluations per base for anneal/random (default: the eval budget shared by the
--               bases, or 48 when there is no --max-evals)
--   batch       candidates evaluated per step (default 8; the evaluator runs a batch at once)
--   top         when the run already has verified entries (a composed run such as beam+autotune),
--               tune the best `top` distinct kernels (default 3); otherwise tune every seed
--   t0, cooling annealing temperature on log(speed-up) (default 0.3) and its decay per step (0.8)
--
-- The default strategy when no LLM is configured.
local search = require "kevo.search"

local each_point = require("kevo.searchutil").each_point

local function exhaustive(ctx, base, space, opts)
  local batch = {}
  each_point(space, function(k) batch[#batch + 1] = ctx:candidate(base, k, "tune") end)
  for i = 1, #batch, opts.batch do
    local part = {}
    for j = i, math.min(i + opts.batch - 1, #batch) do part[#part + 1] = batch[j] end
    ctx:evaluate(part)
  end
end

local function random_search(ctx, base, space, opts, rng)
  local size = ctx:space_size(space)
  local n = math.min(opts.samples, size)
  local seen, done = {}, 0
  while done < n do
    local part = {}
    local tries = 0
    while #part < math.min(opts.batch, n - done) and tries < 100 * opts.batch do
      tries = tries + 1
      local k = ctx:random_knobs(space, rng)
      local key = search.knobs_key(k)
      if not seen[key] then
        seen[key] = true
        part[#part + 1] = ctx:candidate(base, k, "tune")
      end
    end
    if #part == 0 then return end
    ctx:evaluate(part)
    done = done + #part
  end
end

local function logscore(e)
  return e and e.ok and e.score and e.score > 0 and math.log(e.score) or nil
end

-- Simulated annealing: each step evaluates a batch of neighbours of the current point and moves
-- to the best of them when it is better, or with probability exp(delta / T) when it is worse.
local function anneal(ctx, base, space, opts, rng)
  local start = {ctx:candidate(base, ctx:default_knobs(space, base), "tune")}
  for _ = 2, math.min(opts.batch, opts.samples) do
    start[#start + 1] = ctx:candidate(base, ctx:random_knobs(space, rng), "tune")
  end
  local res = ctx:evaluate(start)
  local used = #res
  local cur
  for _, e in ipairs(res) do
    if e.ok and (not cur or search.better(e, cur)) then cur = e end
  end
  cur = cur or res[1]
  local t = opts.t0
  local stale = 0
  while used < opts.samples do
    local nb = ctx:neighbors(cur, math.min(opts.batch, opts.samples - used), rng)
    if #nb == 0 then return end
    local got = ctx:evaluate(nb)
    used = used + #nb
    local best
    for _, e in ipairs(got) do
      if e.ok and (not best or search.better(e, best)) then best = e end
    end
    local moved = false
    if best then
      local a, b = logscore(cur), logscore(best)
      if not a or b > a then
        cur, moved = best, true
      elseif rng:random() < math.exp((b - a) / math.max(t, 1e-9)) then
        cur, moved = best, true
      end
    end
    t = t * opts.cooling
    stale = moved and 0 or stale + 1
    -- stuck at a local optimum: jump to a random point, keep it if it is better
    if stale >= 3 then
      local jump = ctx:evaluate({ctx:candidate(base, ctx:random_knobs(space, rng), "tune")})[1]
      used = used + 1
      if jump.ok and search.better(jump, cur) then cur = jump end
      stale = 0
    end
  end
end

local function run(ctx, opts)
  opts = opts or {}
  local o = {
    method = opts.method or "auto",
    exhaustive_max = opts.exhaustive_max or 64,
    batch = opts.batch or 8,
    top = opts.top or 3,
    t0 = opts.t0 or 0.3,
    cooling = opts.cooling or 0.8,
  }
  local bases = {}
  local winners = ctx:top(o.top * 4)
  local seen_src = {}
  for _, e in ipairs(winners) do -- distinct sources: tune each kernel once
    local key = e.candidate.lang .. "\0" .. e.candidate.source
    if #bases < o.top and not seen_src[key] and #ctx:knob_space(e) > 0 then
      seen_src[key] = true
      bases[#bases + 1] = e
    end
  end
  if #bases == 0 then
    for _, s in ipairs(ctx.seeds) do bases[#bases + 1] = s end
  end
  if #bases == 0 then
    ctx:log("autotune: nothing to tune (no seeds with knobs, no verified kernel)")
    return
  end
  local rng = ctx.rng:fork("autotune")
  -- smallest spaces first: what they leave of the budget goes to the larger ones
  local order = {}
  for i, base in ipairs(bases) do
    order[i] = {base = base, i = i, size = ctx:space_size(ctx:knob_space(base))}
  end
  table.sort(order, function(a, b)
    if a.size ~= b.size then return a.size < b.size end
    return a.i < b.i
  end)
  for i, item in ipairs(order) do
    local base, size = item.base, item.size
    local space = ctx:knob_space(base)
    local left = ctx:budget_left().evals
    local share = left and math.max(1, left // (#bases - i + 1)) or nil
    local bo = {batch = o.batch, t0 = o.t0, cooling = o.cooling,
                samples = opts.samples or share or 48}
    local method = o.method
    if method == "auto" then -- exhaustive only when the whole space fits in this base's share
      method = (#space == 0 or (size <= o.exhaustive_max and size <= (share or size)))
               and "exhaustive" or "anneal"
    end
    ctx:log("autotune: %s %d: %d knob(s), %d point(s), %s", base.space and "seed" or "kernel",
            base.index or base.id, #space, size, method)
    local fn = ({exhaustive = exhaustive, anneal = anneal, random = random_search})[method]
    if not fn then error("autotune: unknown method '" .. tostring(method) .. "'") end
    if share and i < #bases then
      ctx:with_limits({evals = share}, fn, ctx, base, space, bo, rng)
    else
      fn(ctx, base, space, bo, rng)
    end
  end
end

return {
  name = "autotune",
  describe = "tunes template knobs: exhaustive when the space is small, else annealing",
  options = {"method", "exhaustive_max", "samples", "batch", "top", "t0", "cooling"},
  option_values = {method = {"auto", "exhaustive", "anneal", "random"}, exhaustive_max = "count",
                   samples = "count", batch = "count", top = "count", t0 = "positive",
                   cooling = "fraction"},
        run = run,
}
