#!/usr/bin/env bash
# Every shipped recipe's reference and CUDA seeds compile with nvcc -cubin for sm_90 (the knob
# values come from the recipes themselves, through kevo.recipe): every point of a knob space of
# at most 8 points; of a larger one, points that give every knob each of its values at least once
# plus the point of all-largest values (KEVO_TEST_ALL_POINTS=1: every point). A cross-check of
# tests/c/test_recipes_build.c, which compiles with NVRTC as kevo does. Needs nvcc, not a GPU:
# the kernels' results are checked by kevo eval on a GPU.
set -u
NVCC=$(command -v nvcc || true)
[ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc
if [ -z "$NVCC" ]; then
  echo "SKIPPED: nvcc is not on PATH (add /usr/local/cuda/bin): recipe kernels not compiled" >&2
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# one line per compile: FILE [-DKNOB=VALUE ...]
cat > "$work/plan.lua" <<'LUA'
local recipe = require "kevo.recipe"
for _, it in ipairs(recipe.list()) do
  local r = assert(recipe.load(it.path))
  local function emit(src)
    if src.lang ~= "cuda" then return end
    local combos = {{}}
    for _, knob in ipairs(src.knobs) do
      local grown = {}
      for _, c in ipairs(combos) do
        for _, v in ipairs(src.space[knob]) do
          local d = {table.unpack(c)}
          d[#d + 1] = "-D" .. knob .. "=" .. tostring(v)
          grown[#grown + 1] = d
        end
      end
      combos = grown
    end
    local all = os.getenv("KEVO_TEST_ALL_POINTS") == "1" or #combos <= 8
    local chosen = combos
    if not all then -- the diagonal: point d gives knob k its (d mod #values)-th value
      chosen = {}
      local widest = 0
      for _, knob in ipairs(src.knobs) do widest = math.max(widest, #src.space[knob]) end
      for d = 0, widest do
        local c = {}
        for _, knob in ipairs(src.knobs) do
          local vals = src.space[knob]
          c[#c + 1] = "-D" .. knob .. "=" .. tostring(vals[d == widest and #vals or d % #vals + 1])
        end
        chosen[#chosen + 1] = c
      end
    end
    for _, c in ipairs(chosen) do print(src.file .. " " .. table.concat(c, " ")) end
  end
  if it.path:find(os.getenv("KEVO_SRC") .. "/recipes/", 1, true) == 1 then
    emit(r.reference)
    for _, s in ipairs(r.seeds) do emit(s) end
  end
end
LUA
"$KEVO" script "$work/plan.lua" > "$work/plan.txt" || { echo "FAIL: could not list the recipes"; exit 1; }
total=$(wc -l < "$work/plan.txt")
[ "$total" -ge 30 ] || { echo "FAIL: only $total compiles planned"; cat "$work/plan.txt"; exit 1; }
fail=0
i=0
while read -r file defs; do
  i=$((i + 1))
  # shellcheck disable=SC2086
  if ! "$NVCC" -cubin -arch=sm_90 $defs -o "$work/k$i.cubin" "$file" > "$work/log$i" 2>&1; then
    echo "FAIL: nvcc -cubin -arch=sm_90 $defs $file"; sed 's/^/  | /' "$work/log$i"; fail=1
  elif grep -qi "warning" "$work/log$i"; then
    echo "FAIL (warning): $defs $file"; sed 's/^/  | /' "$work/log$i"; fail=1
  fi
done < "$work/plan.txt"
[ $fail = 0 ] && echo "recipe kernels: $total compiles, all clean"
exit $fail
