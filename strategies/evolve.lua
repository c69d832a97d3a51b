-- evolve: evolutionary islands with migration and a MAP-Elites archive over two descriptors
--
-- Options (kevo run --set KEY=VALUE):
--   islands        number of islands (default 3)
--   population     kernels kept per island (default 4)
--   generations    generations (default 6)
--   migrate_every  every this many generations each island's best moves to the next (default 2)
--   elite_rate     chance that a parent is drawn from the MAP-Elites archive (default 0.3)
--   crossover      chance that a child mixes two parents' knobs (default 0.3)
--   descriptors    two descriptors, comma-separated (default "registers,roofline"); each one of
--                  registers (per thread, bins of 32), roofline (% achieved, bins of 10),
--                  knob:NAME (a knob's value), lang
--
-- Each island holds a population. Every generation each island breeds `population` children
-- (an LLM rewrite or a knob mutation of a tournament winner, or a knob crossover of two parents
-- of the same seed); all islands' children are evaluated in one batch; each island keeps its
-- best `population`. The MAP-Elites archive keeps the best kernel of every descriptor cell, so
-- kernels that are good in different ways (few registers, high roofline) survive as parents.
local search = require "kevo.search"

local DESCRIPTORS = {
  registers = function(e)
    local k = e.compile and e.compile.kernels and e.compile.kernels[1]
    return k and k.registers and ("r" .. (k.registers // 32) * 32) or "r?"
  end,
  roofline = function(e)
    local p = e.bench and e.bench.roofline_pct
    return p and ("p" .. math.floor(p / 10) * 10) or "p?"
  end,
  lang = function(e) return e.candidate.lang end,
}

local function descriptor(spec)
  local knob = spec:match("^knob:(.+)$")
  if knob then
    return function(e) return knob .. "=" .. tostring((e.candidate.knobs or {})[knob]) end
  end
  local f = DESCRIPTORS[spec]
  if not f then error("evolve: unknown descriptor '" .. spec .. "'") end
  return f
end

local function tournament(pop, rng)
  local a, b = rng:pick(pop), rng:pick(pop)
  if a.ok ~= b.ok then return a.ok and a or b end
  return search.better(a, b) and a or b
end

local function crossover(ctx, a, b, rng)
  local space = ctx:knob_space(a)
  local k = {}
  for _, knob in ipairs(space) do
    local from = rng:random() < 0.5 and a or b
    k[knob.name] = (from.candidate.knobs or {})[knob.name]
  end
  local c = ctx:candidate(a, k, "crossover")
  return c
end

-- `descriptors` as kevo run checks it before the run starts: nil, or what is allowed.
local function check_descriptors(v)
  local n, bad = 0, nil
  for s in tostring(v):gmatch("[^,]+") do
    n = n + 1
    if not s:match("^knob:.+$") and not DESCRIPTORS[s] then bad = s end
  end
  if n == 2 and not bad then return nil end
  local names = {}
  for k in pairs(DESCRIPTORS) do names[#names + 1] = k end
  table.sort(names)
  return "two comma-separated descriptors, each one of " .. table.concat(names, ", ") ..
    " or knob:NAME"
end

local function run(ctx, opts)
  opts = opts or {}
  local nis, pop_size = opts.islands or 3, opts.population or 4
  local gens, migrate_every = opts.generations or 6, opts.migrate_every or 2
  local elite_rate, cross_rate = opts.elite_rate or 0.3, opts.crossover or 0.3
  local specs = {}
  for s in (opts.descriptors or "registers,roofline"):gmatch("[^,]+") do specs[#specs + 1] = s end
  if #specs ~= 2 then error("evolve: descriptors must name two descriptors") end
  local d1, d2 = descriptor(specs[1]), descriptor(specs[2])
  local rng = ctx.rng:fork("evolve")

  local elites, cells = {}, {} -- cell key -> entry; cells: keys in order of discovery
  local function admit(e)
    if not e.ok then return end
    local key = d1(e) .. "|" .. d2(e)
    local cur = elites[key]
    if not cur then cells[#cells + 1] = key end
    if not cur or search.better(e, cur) then elites[key] = e end
  end

  -- Initial populations: the run's best kernels, else the seeds at default and random knobs.
  local islands, init = {}, {}
  local prior = ctx:top(nis * pop_size)
  for i = 1, nis do islands[i] = {} end
  if #prior > 0 then
    for j, e in ipairs(prior) do
      local isl = islands[(j - 1) % nis + 1]
      isl[#isl + 1] = e
      admit(e)
    end
  else
    local owner = {}
    local seeds = ctx.seeds
    if #seeds == 0 then -- an imported problem: the LLM writes one kernel per island
      for j, c in ipairs(ctx:seed_candidates(nis)) do
        init[j], owner[j] = c, (j - 1) % nis + 1
      end
      if #init == 0 then return end
    else
      for i = 1, nis do
        for j = 1, pop_size do
          local s = seeds[((i - 1) * pop_size + j - 1) % #seeds + 1]
          local k = (i == 1 and j <= #seeds) and ctx:default_knobs(s.space, s)
                    or ctx:random_knobs(s.space, rng)
          init[#init + 1] = ctx:candidate(s, k, "seed")
          owner[#init] = i
        end
      end
    end
    for j, e in ipairs(ctx:evaluate(init)) do
      local isl = islands[owner[j]]
      isl[#isl + 1] = e
      admit(e)
    end
  end

  local function keep_best(list)
    local seen, uniq = {}, {}
    for _, e in ipairs(list) do
      if not seen[e.id] then seen[e.id] = true; uniq[#uniq + 1] = e end
    end
    table.sort(uniq, function(a, b)
      if a.ok ~= b.ok then return a.ok end
      return search.better(a, b)
    end)
    local o = {}
    for i = 1, math.min(pop_size, #uniq) do o[i] = uniq[i] end
    return o
  end

  for gen = 1, gens do
    local kids, owner = {}, {}
    for i, isl in ipairs(islands) do
      if #isl > 0 then
        for _ = 1, pop_size do
          local parent
          if #cells > 0 and rng:random() < elite_rate then
            parent = elites[cells[rng:int(1, #cells)]]
          else
            parent = tournament(isl, rng)
          end
          local made
          if rng:random() < cross_rate then
            local other = tournament(isl, rng)
            if other ~= parent and other.candidate.seed == parent.candidate.seed
               and other.candidate.source == parent.candidate.source then
              made = {crossover(ctx, parent, other, rng)}
            end
          end
          made = made or ctx:children(parent, 1, nil, rng)
          for _, c in ipairs(made) do
            kids[#kids + 1] = c
            owner[#kids] = i
          end
        end
      end
    end
    if #kids == 0 then return end
    local got = ctx:evaluate(kids)
    local grown = {}
    for i, isl in ipairs(islands) do grown[i] = {table.unpack(isl)} end
    for j, e in ipairs(got) do
      local g = grown[owner[j]]
      g[#g + 1] = e
      admit(e)
    end
    for i = 1, nis do islands[i] = keep_best(grown[i]) end
    if gen % migrate_every == 0 and nis > 1 then
      local bests = {}
      for i = 1, nis do bests[i] = islands[i][1] end
      for i = 1, nis do
        local to = islands[i % nis + 1]
        if bests[i] then
          to[#to + 1] = bests[i]
          islands[i % nis + 1] = keep_best(to)
        end
      end
    end
    ctx:log("evolve: generation %d: %d cells in the archive, best %s", gen, #cells,
            search.describe_scores(ctx:top(1)))
  end
end

return {name = "evolve",
        describe =
          "evolutionary islands with migration and a MAP-Elites archive over two descriptors",
        options =
          {"islands", "population", "generations", "migrate_every", "elite_rate", "crossover",
          "descriptors"},
        option_values = {islands = "count", population = "count", generations = "count",
                         migrate_every = "count", elite_rate = "fraction", crossover = "fraction",
                         descriptors = check_descriptors},
        run = run}
