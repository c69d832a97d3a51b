#!/usr/bin/env bash
# The archive end to end: a writer killed with SIGKILL mid-run loses no row whose call had
# returned; two writers share one file; kevo runs / kevo show on good, empty, missing and corrupt
# archives.
set -u
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/out
t() { # t NAME EXPECTED_RC CMD... : runs CMD, checks its exit code
  local name=$1 want=$2; shift 2
  "$@" >"$out" 2>&1; local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, want $want"; sed 's/^/  | /' "$out"; fail=1
  else echo "ok   $name"; fi
}
has() { grep -q -- "$1" "$out" || { echo "FAIL: output lacks '$1'"; sed 's/^/  | /' "$out"; fail=1; }; }

# A writer: one run, then journal entries, candidates and evaluations until killed. Each id is
# logged (and flushed) only after the call that made it returned.
cat > "$tmp/writer.lua" <<'EOF'
local archive = require "kevo.archive"
local db = assert(archive.open(arg[1]))
local log = assert(io.open(arg[2], "w"))
local run = tonumber(arg[3]) or db:run_create{recipe = "softmax", strategy = "kill-test", seed = 1}
local n = tonumber(arg[4]) or math.huge
local parent
local i = 0
while i < n do
  i = i + 1
  local seq = db:journal_append(run, "llm", "request " .. i, string.rep("r", i % 500))
  log:write("j ", run, " ", seq, "\n"); log:flush()
  local c = db:candidate_add{run = run, parent = parent, origin = "llm", lang = "cuda",
                             source = "// candidate " .. i .. "\n__global__ void k() {}\n"}
  log:write("c ", c, "\n"); log:flush()
  local e = db:eval_add{candidate = c, stage = "done", verdict = i % 4 == 0 and "wrong" or "ok",
                        ok = i % 4 ~= 0, speedup = 1 + (i % 97) / 10, median_ms = 1 / i}
  log:write("e ", e, "\n"); log:flush()
  parent = c
end
EOF

# The checker: every logged id is in the archive, and journal numbers are contiguous.
cat > "$tmp/check.lua" <<'EOF'
local archive = require "kevo.archive"
local db = assert(archive.open(arg[1]))  -- runs the integrity check
local want = {j = {}, c = {}, e = {}}
local logged = 0
for i = 2, #arg do
  for line in io.lines(arg[i]) do
    local kind, a, b = line:match("^(%a) (%d+) ?(%d*)$")
    assert(kind, "bad log line: " .. line)
    if kind == "j" then want.j[#want.j + 1] = {tonumber(a), tonumber(b)}
    else want[kind][#want[kind] + 1] = tonumber(a) end
    logged = logged + 1
  end
end
local seqs = {}
for _, j in ipairs(want.j) do
  local kind, req = db:journal_get(j[1], j[2])
  assert(kind == "llm", ("journal entry %d/%d lost"):format(j[1], j[2]))
  local key = j[1] .. "/" .. j[2]
  assert(not seqs[key], "seq " .. key .. " handed out twice")
  seqs[key] = true
end
local cands, evals = {}, {}
for _, r in ipairs(db:runs()) do
  local count = db:journal_count(r.id)
  local n = 0
  for seq in db:journal(r.id) do n = n + 1; assert(seq == n) end
  assert(n == count, "journal of run " .. r.id .. " has a gap")
  for _, c in ipairs(db:candidates(r.id)) do cands[c.id] = true end
  for _, e in ipairs(db:evaluations{run = r.id}) do evals[e.id] = true end
end
for _, c in ipairs(want.c) do assert(cands[c], "candidate " .. c .. " lost") end
for _, e in ipairs(want.e) do assert(evals[e], "evaluation " .. e .. " lost") end
print(("%d logged rows all present"):format(logged))
EOF

# 1. kill -9 mid-run
db=$tmp/kill.db
"$KEVO" script "$tmp/writer.lua" "$db" "$tmp/kill.log" &
pid=$!
for _ in $(seq 1 300); do
  [ -f "$tmp/kill.log" ] && [ "$(wc -l < "$tmp/kill.log")" -ge 600 ] && break
  sleep 0.05
done
kill -9 $pid; wait $pid 2>/dev/null
lines=$(wc -l < "$tmp/kill.log")
echo "writer killed after $lines logged rows"
[ "$lines" -ge 600 ] || { echo "FAIL: the writer logged only $lines rows"; fail=1; }
t "reopen after kill -9: every returned row is there" 0 "$KEVO" script "$tmp/check.lua" "$db" "$tmp/kill.log"
has "all present"
t "kevo runs after kill -9" 0 "$KEVO" runs --db "$db"; has "kill-test"; has "running"
t "kevo show after kill -9" 0 "$KEVO" show 1 --db "$db"; has "best: candidate"; has "top candidates"
t "KEVO_DB picks the archive" 0 env KEVO_DB="$db" "$KEVO" show last; has "run 1: softmax"
t "kevo runs --json" 0 "$KEVO" runs --db "$db" --json
cp "$out" "$tmp/runs.json"
printf 'local j = require "kevo.json"\nlocal t = assert(j.decode(io.read("a")))\nassert(t[1].id == 1 and t[1].evaluations > 0 and t[1].best_speedup > 1)\n' > "$tmp/runs_json.lua"
t "kevo runs --json parses" 0 "$KEVO" script "$tmp/runs_json.lua" < "$tmp/runs.json"
"$KEVO" show 1 --db "$db" --json > "$tmp/show.json" 2>&1
printf 'local j = require "kevo.json"\nlocal t = assert(j.decode(io.read("a")))\nassert(t.run.id == 1 and t.best.candidate_source and #t.top == 10 and t.verdicts.ok > 0)\n' > "$tmp/show_json.lua"
t "kevo show --json parses" 0 "$KEVO" script "$tmp/show_json.lua" < "$tmp/show.json"

# 2. two writers at once on one run: both finish, numbers are unique and contiguous
db2=$tmp/two.db
printf 'local db = assert(require("kevo.archive").open(arg[1]))\nprint(db:run_create{recipe = "shared"})\n' > "$tmp/mkrun.lua"
run=$("$KEVO" script "$tmp/mkrun.lua" "$db2")
"$KEVO" script "$tmp/writer.lua" "$db2" "$tmp/a.log" "$run" 400 & pa=$!
"$KEVO" script "$tmp/writer.lua" "$db2" "$tmp/b.log" "$run" 400 & pb=$!
wait $pa; ra=$?; wait $pb; rb=$?
[ $ra = 0 ] && [ $rb = 0 ] && echo "ok   two writers both finished" ||
  { echo "FAIL two writers: exit $ra and $rb"; fail=1; }
t "two writers: all rows, seq 1..800 once each" 0 "$KEVO" script "$tmp/check.lua" "$db2" "$tmp/a.log" "$tmp/b.log"
printf 'local db = assert(require("kevo.archive").open(arg[1]))\nassert(db:journal_count(tonumber(arg[2])) == 800)\n' > "$tmp/count.lua"
t "two writers: 800 journal entries" 0 "$KEVO" script "$tmp/count.lua" "$db2" "$run"

# 3. missing, empty, corrupt archives; bad usage
t "runs, no archive: not an error" 0 "$KEVO" runs --db "$tmp/none.db"; has "no archive"
[ -e "$tmp/none.db" ] && { echo "FAIL: kevo runs created an archive"; fail=1; }
t "runs --json, no archive: []" 0 "$KEVO" runs --db "$tmp/none.db" --json; has "^\[\]"
t "show, no archive" 2 "$KEVO" show 1 --db "$tmp/none.db"; has "no archive"
printf 'assert(require("kevo.archive").open(arg[1]))\n' > "$tmp/create.lua"
"$KEVO" script "$tmp/create.lua" "$tmp/empty.db"
t "runs, empty archive" 0 "$KEVO" runs --db "$tmp/empty.db"; has "no runs"
t "show last, empty archive" 2 "$KEVO" show last --db "$tmp/empty.db"; has "no runs"
t "show unknown run" 2 "$KEVO" show 42 --db "$db"; has "no run 42"
t "show without RUN" 2 "$KEVO" show --db "$db"; has "usage: kevo show"
t "show bad RUN" 2 "$KEVO" show x1 --db "$db"
t "runs bad option" 2 "$KEVO" runs --frobnicate; has "usage: kevo runs"
t "runs --help" 0 "$KEVO" runs --help; has "usage: kevo runs"
head -c 20000 /dev/urandom > "$tmp/corrupt.db"
t "runs, corrupt archive" 1 "$KEVO" runs --db "$tmp/corrupt.db"; has "corrupt.db"; has "move it away"
t "show, corrupt archive" 1 "$KEVO" show 1 --db "$tmp/corrupt.db"; has "move it away"
cp "$db" "$tmp/half.db"
truncate -s $(( $(stat -c %s "$db") / 2 )) "$tmp/half.db"
t "runs, truncated archive" 1 "$KEVO" runs --db "$tmp/half.db"; has "corrupt"

[ $fail = 0 ] && echo "archive cli: all passed"
exit $fail
