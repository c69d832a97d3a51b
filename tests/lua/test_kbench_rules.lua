-- The import-time judgement of lua/kevo/kbench.lua on descriptions shaped as the PyTorch bridge
-- writes them (python/kb_bridge.py: outputs[].stats with min, max, absmax, numel, at_min,
-- at_max, others and moved): whenever a tolerance is chosen, a kernel with torch's own error
-- passes it and one that writes the same values whatever its inputs (all zeros, a constant, a
-- fixed tensor) fails it on the draws the bridge saw; otherwise the problem is refused with a
-- reason that says which. Figures of the real problems are those of the H200 sweep
-- (docs/kbench.md).
local kbench = require "kevo.kbench"
local json = require "kevo.json"

local function desc(out, tol)
  return {kevo_description = 1, problem = "p.py",
          inputs = {{name = "x", dtype = "f32", shape = {8}, init = "normal"}},
          weights = {}, outputs = {out},
          tolerance = tol or {f32 = 1e-5, measured = 1e-7}}
end

local function scalar(v, moved, s)
  return desc({name = "out", dtype = "f32", shape = {1},
               stats = {min = v, max = v, absmax = math.abs(v), numel = 1, at_min = 1,
                        at_max = 1, others = 0, moved = moved}},
              {f32 = 1e-5, measured = s})
end

local function tol_at(t, e) return t.atol + t.rtol * math.abs(e) end

-- The two draws of a scalar the bridge saw: v and v - moved. Checks the chosen tolerance
-- against a right kernel (off by torch's own error s, scaled as the bridge measures it) and
-- against every constant on a fine grid (each must be outside the tolerance on one draw).
local function check_scalar(v, moved, s)
  local t, err = kbench.tolerance(scalar(v, moved, s))
  if not t then return nil, err end
  t = t.f32
  local draws = {v, v - moved}
  for _, e in ipairs(draws) do
    assert(s * (1 + math.abs(e)) <= tol_at(t, e),
           ("v=%g moved=%g: a right kernel fails at %g"):format(v, moved, e))
    assert(math.abs(e) > tol_at(t, e) or math.abs(draws[1] - draws[2]) > 0,
           "all-zero passes")
  end
  -- with a margin: the two draws are four times as far apart as a constant could straddle
  assert(math.abs(draws[1] - draws[2]) > 4 * (tol_at(t, draws[1]) + tol_at(t, draws[2])),
         ("v=%g moved=%g: accepted without the margin"):format(v, moved))
  local lo, hi = math.min(draws[1], draws[2]), math.max(draws[1], draws[2])
  local width = hi - lo + 4 * tol_at(t, hi)
  for k = 0, 2000 do
    local c = lo - 2 * tol_at(t, hi) + width * k / 2000
    local passes = true
    for _, e in ipairs(draws) do
      if math.abs(c - e) > tol_at(t, e) then passes = false end
    end
    assert(not passes, ("v=%g moved=%g: the constant %.17g passes atol %g rtol %g")
           :format(v, moved, c, t.atol, t.rtol))
  end
  return t
end

-- level1 95_CrossEntropyLoss (8.36, torch's error 8.33e-08), 98_KLDivLoss (0.0473, 1.25e-06),
-- 99_TripletMarginLoss and 100_HingeLoss (1, 1.25e-06): judged when the value moves between
-- draws by more than twice the tolerance, with the tolerance kept or rescaled.
for _, case in ipairs{{8.36, 8.33e-08}, {0.0473, 1.25e-06}, {1, 1.25e-06}} do
  local v, s = case[1], case[2]
  for _, moved in ipairs{1e-1, 1e-2, 1e-3, 1e-4} do
    local t, err = check_scalar(v, moved, s)
    if not t then
      assert(err:find("refused: output out is at most") and err:find("moving"), err)
    end
  end
  -- a value that moves by 1e-2 is judged at the measured tolerance or a rescaled one
  assert(check_scalar(v, 1e-2, s), "scalar moving by 1e-2 refused")
end
-- a scalar that does not move at all between draws: refused (a constant kernel passes)
local _, err = kbench.tolerance(scalar(1, 0, 1.25e-6))
assert(err and err:find("refused") and err:find("a constant"), err)
-- without the movement (an older description), a scalar is refused as before, and says so
local old = scalar(1, nil, 1.25e-6)
_, err = kbench.tolerance(old)
assert(err and err:find("moving %(not measured%) between draws"), err)

-- randomized: any accepted scalar or two-value tolerance separates; seeded, so repeatable
math.randomseed(14)
local accepted, refused = 0, 0
for _ = 1, 400 do
  local v = (math.random() < 0.5 and -1 or 1) * 10 ^ (math.random() * 8 - 6)
  local moved = math.abs(v) * 10 ^ (math.random() * 6 - 7)
  local s = 10 ^ (math.random() * 6 - 12)
  if check_scalar(v, moved, s) then accepted = accepted + 1 else refused = refused + 1 end
end
assert(accepted > 50 and refused > 50, ("accepted %d refused %d"):format(accepted, refused))

-- level2/42 (16 values up to 55.2 spanning 0.00112, torch's error 1.04e-07): judged once the
-- values move between draws; the movement decides, not the narrow spread within a draw
local d42 = desc({name = "out", dtype = "f32", shape = {16, 1},
                  stats = {min = 55.2 - 0.00112, max = 55.2, absmax = 55.2, numel = 16,
                           at_min = 1, at_max = 1, others = 15, moved = 0.05}},
                 {f32 = 1e-5, measured = 1.04e-7})
local t42 = assert(kbench.tolerance(d42)).f32
assert(0.05 > 2 * tol_at(t42, 55.2), "a constant passes level2/42")
assert(1.04e-7 * (1 + 55.2) <= tol_at(t42, 55.2), "a right kernel fails level2/42")

-- level2/23 (mean of a group-normalised tensor: at most 4.42e-08, spanning 8.24e-08, torch's
-- error 4.42e-08): rounding noise, refused with that reason whatever it moves
for _, moved in ipairs{0, 8e-8, json.null} do
  local d23 = desc({name = "out", dtype = "f32", shape = {128},
                    stats = {min = -3.82e-8, max = 4.42e-8, absmax = 4.42e-8, numel = 128,
                             at_min = 1, at_max = 1, others = 127, moved = moved}},
                   {f32 = 1e-5, measured = 4.42e-8})
  local r, e = kbench.recipe(d23)
  assert(not r and e:find("output out is rounding noise")
         and e:find("all%-zero kernel is as right"), e)
end

-- level2/9: a ReLU of a bias-shifted matmul, zero at all but 3 of 8388608 elements in one
-- draw: refused at import as nearly constant
local d9 = desc({name = "out", dtype = "f32", shape = {1024, 8192},
                 stats = {min = 0, max = 0.31, absmax = 0.31, numel = 8388608,
                          at_min = 8388605, at_max = 1, others = 0, moved = 0.31}})
local r9, e9 = kbench.recipe(d9)
assert(not r9 and e9:find("refused: the reference is nearly constant: output out sits at one "
  .. "value %(its minimum, 0 in the first draw%) at all but 0 of its 8388608 elements"), e9)
-- a ReLU (half the elements at zero) and a clamp with 1% off its bound are judged
for _, others in ipairs{4194304, 83887} do
  local d = desc({name = "out", dtype = "f32", shape = {1024, 8192},
                  stats = {min = 0, max = 4, absmax = 4, numel = 8388608,
                           at_min = 8388608 - others, at_max = 1, others = others,
                           moved = 4}})
  assert(kbench.recipe(d))
end
-- level1/98_KLDivLoss: get_inputs() scales its inputs by a random factor, so the value moves
-- between the import's own draws; the worker draws each element from the stated inits, and
-- there it barely moves: the draws like kevo's trials (stats.trials) decide
local function kl(trials)
  return desc({name = "out", dtype = "f32", shape = {1},
                stats = {min = 0.0473, max = 0.0473, absmax = 0.0473, numel = 1, at_min = 1,
                         at_max = 1, others = 0, moved = 0.03, trials = trials}},
               {f32 = 1e-5, measured = 1.25e-6})
end
assert(kbench.tolerance(kl(nil)), "98 without trials: judged on the import's movement")
local _, e98 = kbench.tolerance(kl({min = 2.1e-3, max = 2.1e-3, absmax = 2.1e-3, numel = 1,
                                   at_min = 1, at_max = 1, others = 0, moved = 3e-6}))
assert(e98 and e98:find("refused") and e98:find("in draws like kevo's trials"), e98)
-- trials that move as much as the import's: judged
assert(kbench.tolerance(kl({min = 0.05, max = 0.05, absmax = 0.05, numel = 1, at_min = 1,
                            at_max = 1, others = 0, moved = 0.02})))
-- trials whose values are tiny: an all-zero kernel would pass them, so rescaled or refused
local tz = kbench.tolerance(kl({min = 5e-6, max = 5e-6, absmax = 5e-6, numel = 1, at_min = 1,
                                at_max = 1, others = 0, moved = 5e-6}))
assert(not tz or tz.f32.atol < 1e-5, "an all-zero kernel passes the trials' outputs")
-- nearly constant in the draws like kevo's trials only: refused
local d9t = desc({name = "out", dtype = "f32", shape = {1024, 8192},
                  stats = {min = 0, max = 0.31, absmax = 0.31, numel = 8388608,
                           at_min = 4000000, at_max = 1, others = 4388607, moved = 0.31,
                           trials = {min = 0, max = 0.01, absmax = 0.01, numel = 8388608,
                                     at_min = 8388600, at_max = 1, others = 3, moved = 0.01}}})
local r9t, e9t = kbench.recipe(d9t)
assert(not r9t and e9t:find("nearly constant") and e9t:find("all but 3 of"), e9t)

-- a scalar is never "nearly constant": it has one element
assert(kbench.recipe(scalar(8.36, 0.01, 8.33e-8)))

print(("kbench rules ok (random scalars: %d accepted, %d refused)"):format(accepted, refused))
