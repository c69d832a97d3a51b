-- kevo.search: the search context a strategy sees.
--
-- A strategy is a Lua file returning {name=, describe=, run=function(ctx, opts)}. It runs in a
-- sandbox (no io/os/package, strict globals, memory and instruction caps) and talks to the rest
-- of kevo only through ctx:
--
--   ctx.task              the loaded recipe (a table; name, params, seeds, prompt, ...)
--   ctx.seeds             list of seed sources: {index, lang, source, launch, file, space}, where
--                         space is an ordered list {{name=, values={...}}, ...} (the knob space)
--   ctx.best              the best verified result so far (see "entries" below), or nil
--   ctx.rng               a seeded generator: rng:random() in [0,1), rng:int(m, n), rng:pick(list),
--                         rng:shuffle(list), rng:fork(label). Never use anything else for choices.
--   ctx.llm               true when a language model is configured
--   ctx:evaluate(cands)   evaluates a list of candidates {lang, source, launch, knobs, parent,
--                         origin} in one batch; returns their entries in order. Records every
--                         candidate and evaluation in the archive, updates ctx.best, counts toward
--                         --max-evals. A candidate already evaluated in this run is not evaluated
--                         again: its earlier entry comes back (free). When the evaluation budget
--                         (the run's or a with_limits phase's) ends inside the batch, the entries
--                         of the candidates before that point come back (a shorter list) with the
--                         stop as a second value; the next call raises it.
--   ctx:propose(parent, feedback, n)  asks the LLM for n rewrites of parent (an entry or a
--                         candidate), or, parent nil, for n kernels written from the task alone;
--                         returns candidates (maybe fewer than n), or nil when no LLM is
--                         configured.
--   ctx:profile(entries [, {reference = false}])  the hardware's view of verified entries
--                         (docs/profile.md): one profile per entry, in order: {ok, candidate,
--                         reference, diagnosis, feedback} (summaries of Nsight Compute's metrics
--                         and a ranked diagnosis), or {ok = false, reason, error} when it could
--                         not be taken (no profiler, no permission, not a verified entry). The
--                         entry keeps it as entry.profile, so ctx:propose(entry) carries its
--                         diagnosis to the model. Each entry profiled
--                         counts as one evaluation of the budget; one profiled before comes back
--                         free. The whole list is profiled in one run of the profiler.
--   ctx:history()         every entry so far, in evaluation order (a fresh list)
--   ctx:top(k)            the k best verified entries, best first, one per distinct candidate
--   ctx:budget_left()     {evals=, seconds=, tokens=}; nil fields are unlimited; inside
--                         with_limits, the tighter of the phase's budget and the run's
--   ctx:log(fmt, ...)     one line on stderr (above the progress line)
--   ctx:knob_space(x)     the knob space of a seed, an entry or a candidate (ordered list)
--   ctx:seed_candidates([n])  one candidate per seed at its default knobs (the first value of
--                         each); without seeds, n (2) the LLM writes from the task (ctx:propose),
--                         asked once more when no reply held a usable kernel
--   ctx:neighbors(x, k)   up to k new candidates that change one knob of x (an entry or candidate)
--   ctx:known(c)          true when candidate c was evaluated in this run already
--   ctx:random_knobs(space)  a random point of a space
--   ctx:children(entry, n [, feedback])  ctx:propose when an LLM is configured, else neighbors
--   ctx:candidate(base, knobs, origin)  a candidate: base's source with other knobs, parent base
--   ctx:with_limits({evals=, seconds=}, fn, ...)  runs fn(...) with a tighter budget; returns
--                         true, fn's results when fn returned; false, stop when that budget (or
--                         the token budget, or a stall) ended it; re-raises any stop of the whole
--                         run
--
-- Entries: an evaluation result (docs/architecture.md "Evaluation result": ok, verdict, stage,
-- message, feedback, compile, verify, bench) plus `id` (the archive's candidate id),
-- `candidate` (the candidate table, with .id) and `score` (the speed-up over the reference for
-- a verified entry, else nil).
--
-- Stops: when a budget is spent (--max-evals, --time, the token budget, Ctrl-C, or a verdict
-- that means no evaluation can succeed here, such as no GPU), ctx:evaluate and ctx:propose raise
-- a stop object. Strategies need no budget code: the run driver catches it and finishes the run.
-- search.is_stop(err) tells a stop from an error; stop.reason names the budget.
--
-- Determinism: a strategy must make the same calls given the same seed and the same results.
-- Iterate lists, not pairs(); draw from ctx.rng only.
local json = require "kevo.json"
local journal = require "kevo.journal"

local M = {}

-- Stops, knobs and the ordering of entries are plain functions shared with the strategy
-- process (lua/kevo/searchutil.lua); the context below is the host's alone.
local util = require "kevo.searchutil"
for _,
k in ipairs({"is_stop", "is_global_stop", "stop", "knob_value", "normalize_space", "knobs_key",
                    "better", "feedback_text", "describe_scores", "end_phase"}) do
  M[k] = util[k]
end
local stop, knobs_key = util.stop, util.knobs_key

-- A stall (docs/strategies.md): STALL_BATCHES evaluation batches in a row that held only
-- candidates evaluated before, or STALL_LLM_BATCHES in a row of such batches proposed by the
-- LLM (each was a paid call). A resume of a finished run starts both counts afresh (the
-- `resume` entry's `fresh_stall`), so a run that stalled goes on under a new budget.
M.STALL_BATCHES, M.STALL_LLM_BATCHES = 50, 5

local make_stop = util.stop_object -- a stop, not raised

-- The seeded generator lives in kevo.rng; search.rng is its constructor.
M.rng = require("kevo.rng").new

local function copy(t)
  local o = {}
  for k, v in pairs(t or {}) do o[k] = v end
  return o
end

local function candidate_key(c)
  return table.concat({c.lang, c.source, c.launch or "", knobs_key(c.knobs)}, "\0")
end

---------------------------------------------------------------------------------------------
-- The context
local Ctx = {}
Ctx.__index = Ctx

--[[ search.new(opts) -> ctx. Used by the run driver (kevo.run), tests and the walkthrough.
  opts.task       the recipe table
  opts.seeds      list of {lang, source, launch, file, space}
  opts.evaluator  {evaluate_many = function(list of candidates) -> list of results}
  opts.proposer   nil, or {propose = function(parent_candidate, parent_entry, feedback, n, task)
                  -> candidates, tokens_used}; parent_candidate nil: write from the task alone
  opts.archive    nil, or an open kevo.archive handle; opts.run: the run id
  opts.seed       the run's seed; opts.max_evals, opts.time_s, opts.max_tokens: budgets
  opts.clock      function() -> seconds (monotonic); opts.interrupted: function() -> bool
  opts.tape       nil, or a kevo.journal tape: every nondeterministic answer (evaluation
                  results, proposals, clock and Ctrl-C stops) is recorded in, or read back
                  from, the run's journal (docs/resume.md). The run's time (ctx:elapsed()) is
                  then the journal's: frozen at the last entry read back while replaying.
  opts.fault(point)  a test hook called at points where a kill must lose nothing
  opts.on_progress(ctx), opts.on_log(line): display hooks ]]
-- What the host hands the context (the evaluator, the archive, the proposer with its LLM
-- session, the journal's tape, hooks) is kept here, keyed by the context, not in the context:
-- a strategy holds the context and must not reach those objects through it.
local private = setmetatable({}, {__mode = "k"})

function M.new(opts)
  assert(type(opts) == "table", "search.new: options table expected")
  assert(opts.evaluator, "search.new: evaluator required")
  local clock = opts.clock or require("kevo").clock
  local seeds = {}
  for i, s in ipairs(opts.seeds or {}) do
    seeds[i] = {index = i, lang = s.lang, source = s.source, launch = s.launch, file = s.file,
                space = M.normalize_space(s.space), defaults = s.defaults}
  end
  local ctx = setmetatable({
    task = opts.task or {},
    seeds = seeds,
    best = nil,
    rng = M.rng(opts.seed or 1),
    llm = opts.proposer ~= nil,
    run = opts.run,
    evals = 0,       -- evaluations made (duplicates not counted)
    tokens = 0,      -- LLM tokens spent
    proposals = 0,   -- candidates the LLM returned
    _clock = clock,
    _time_base = 0,  -- the run's time when the live clock (re)started
    _live_t0 = clock(),
    _offline_id = 0, -- ids of candidates a replay has no record of (negative)
    _entries = {},
    _seen = {},      -- candidate key -> entry
    _seen_at = {verify = {}}, -- level -> candidate key -> entry of that cheaper level
    _by_id = {},     -- candidate id -> entry
    _next_id = 0,    -- ids when there is no archive
    _phase = nil,    -- {evals_end=, deadline=} set by with_limits
    _dup_batches = 0,
    _dup_llm_batches = 0, -- of those, batches of LLM proposals (each a paid call)
    _fatal = nil,    -- a verdict that means no evaluation can succeed here
  }, Ctx)
  private[ctx] = {opts = opts, tape = opts.tape}
  local tape = opts.tape
  if tape then
    tape:on_live(function(t)
      ctx._time_base, ctx._live_t0 = t.t, clock()
    end)
    -- a resume recorded here: the budgets from then on (absent: unlimited)
    tape.on_budgets = function(b)
      opts.max_evals, opts.time_s, opts.max_tokens = b.max_evals, b.time_s, b.max_tokens
      if b.fresh_stall then M.fresh_stall(ctx) end
    end
  end
  return ctx
end

-- Starts the stall counts afresh (a resume of a finished run, recorded in its `resume`
-- journal entry as fresh_stall, so a replay does the same at the same point).
function M.fresh_stall(ctx)
  ctx._dup_batches, ctx._dup_llm_batches = 0, 0
end

-- The run's time in seconds: live, since the run started (across resumes); replaying, the
-- time of the last journal entry read back.
function Ctx:_now()
  local tape = private[self].tape
  if tape and tape.mode ~= "live" then return tape.t end
  return self._time_base + (self._clock() - self._live_t0)
end

-- The run's limits as they stand: {max_evals=, time_s=, max_tokens=} (nil: unlimited).
function Ctx:limits()
  local o = private[self].opts
  return {max_evals = o.max_evals, time_s = o.time_s, max_tokens = o.max_tokens}
end

function Ctx:elapsed()
  return self:_now()
end

function Ctx:_live()
  return private[self].tape == nil or private[self].tape:live()
end

function Ctx:budget_left()
  local o = private[self].opts
  local left = {}
  if o.max_evals then left.evals = math.max(0, o.max_evals - self.evals) end
  if o.time_s then left.seconds = math.max(0, o.time_s - self:elapsed()) end
  if o.max_tokens then left.tokens = math.max(0, o.max_tokens - self.tokens) end
  local p = self._phase
  if p then
    if p.evals_end then
      local e = math.max(0, p.evals_end - self.evals)
      left.evals = left.evals and math.min(left.evals, e) or e
    end
    if p.deadline then
      local s = math.max(0, p.deadline - self:_now())
      left.seconds = left.seconds and math.min(left.seconds, s) or s
    end
  end
  return left
end

-- The outermost with_limits level whose budget test(p) says is spent, or nil.
local function spent_phase(p, test)
  local owner
  while p do
    if test(p) then owner = p end
    p = p.parent
  end
  return owner
end

-- The stop of a spent evaluation budget (the run's, or a with_limits phase's), not raised; nil
-- while there are evaluations left.
function Ctx:_evals_spent()
  local o = private[self].opts
  if o.max_evals and self.evals >= o.max_evals then
    return make_stop("evals", "--max-evals " .. o.max_evals .. " reached")
  end
  local pe =
    spent_phase(self._phase, function(p) return p.evals_end and self.evals >= p.evals_end end)
  if pe then return make_stop("phase", "phase evaluations", pe.depth) end
  return nil
end

-- Raises the stop that applies now, if any. `what` is "evaluate" or "propose".
-- Deterministic stops (the evaluation and token budgets, a fatal verdict) are tested here
-- every time; the others (Ctrl-C, the clock) are tested live and recorded in the journal,
-- and read back from it when replaying.
function Ctx:_check_stop(what)
  local o = private[self].opts
  local tape = private[self].tape
  local replaying = tape and not tape:live()
  if replaying then
    local s = tape:take_stop()
    if s then stop(s.reason, s.message, s.depth) end
    replaying = not tape:live() -- a resume goes live here at the journal's end
  end
  if self._fatal then stop(self._fatal.reason, self._fatal.message) end
  local spent = self:_evals_spent()
  if spent then error(spent, 0) end
  if what == "propose" and o.max_tokens and self.tokens >= o.max_tokens then
    stop("tokens", "token budget " .. o.max_tokens .. " spent")
  end
  if tape and tape.diverged and tape.offline >= math.max(200, 2 * tape.n) then
    stop("replay", string.format("%d steps past the divergence, offline", tape.offline))
  end
  if replaying then return end
  local reason, message, depth
  if o.interrupted and o.interrupted() then
    reason, message = "interrupted", "Ctrl-C"
  elseif o.time_s and self:_now() >= o.time_s then
    reason, message = "time", "--time budget spent"
  else
    local now = self:_now()
    local pt = spent_phase(self._phase, function(p) return p.deadline and now >= p.deadline end)
    if pt then reason, message, depth = "phase", "phase time", pt.depth end
  end
  if not reason then return end
  if tape then
    tape:record("stop", journal.canonical({what = what}),
                {reason = reason, message = message, depth = depth, t = self:_now()})
  end
  stop(reason, message, depth)
end

local function check_candidate(c, i)
  if type(c) ~= "table" then error("ctx:evaluate: candidate " .. i .. " is not a table", 3) end
  if type(c.source) ~= "string" then
    error("ctx:evaluate: candidate " .. i .. ": source must be a string", 3)
  end
  if c.lang ~= "cuda" and c.lang ~= "triton" then
    error("ctx:evaluate: candidate " .. i .. ": lang must be 'cuda' or 'triton'", 3)
  end
  if c.launch ~= nil and type(c.launch) ~= "string" then
    error("ctx:evaluate: candidate " .. i .. ": launch must be a string (a Lua chunk)", 3)
  end
  if c.knobs ~= nil and type(c.knobs) ~= "table" then
    error("ctx:evaluate: candidate " .. i .. ": knobs must be a table", 3)
  end
end

-- The archive id of a parent (an id, an entry or a candidate); nil for none, and for the
-- negative ids of entries that name no candidate (not evaluated, a replay's miss).
local function parent_id(p)
  local id
  if type(p) == "number" then
    id = p
  elseif type(p) == "table" then
    id = p.id or (p.candidate and p.candidate.id)
  end
  return math.type(id) == "integer" and id > 0 and id or nil
end

local LEVELS

local function score_of(r)
  if not r.ok or r.level then return nil end
  local b = r.bench
  if b and b.speedup then return b.speedup end
  if b and b.median_ms and b.median_ms > 0 then return 1 / b.median_ms end
  return 0
end

-- Verdicts after which no other candidate can do better on this machine.
local FATAL_VERDICT = {no_gpu = "no_gpu"}

local REPLAY_MISS = {ok = false, verdict = "error", stage = "compile",
                     message = "E_REPLAY: no recorded result for this candidate (a replay is " ..
                               "offline: it evaluates nothing)"}

-- A result as the journal holds it: JSON round trip, so a live run and its replay hand the
-- strategy the same values (numbers, strings cut at a NUL, no functions).
local function as_recorded(r)
  if type(r) ~= "table" then
    r = {ok = false, verdict = "error", stage = "compile",
         message = "evaluator returned no result for this candidate"}
  end
  local ok, text = pcall(journal.canonical, r)
  if not ok then text = journal.canonical({ok = false, verdict = r.verdict or "error",
                                           stage = r.stage or "compile", message = r.message}) end
  return json.decode(text), text
end

-- The request of an evaluation batch: each candidate's identity and lineage.
local function eval_items(todo)
  local items = {}
  for j, c in ipairs(todo) do
    items[j] = {lang = c.lang, src = journal.digest(c.source), launch = journal.digest(c.launch),
                knobs = knobs_key(c.knobs), parent = c.parent, origin = c.origin,
                level = c.level, promote = c.id} -- both nil for a first full evaluation
  end
  return items
end

-- Cheaper evaluation levels (ctx:evaluate(cands, {level = ...})). A result of one is marked
-- `level` and holds no bench: no speed-up, no score, never ctx.best, ctx:top or the archive's
-- best. The same candidate asked for at the full level later is evaluated again (promoted)
-- under its candidate id. ask: what the evaluator is told; mark: the result as recorded.
LEVELS = {
  verify = {ask = {bench = false}, mark = function(r)
    if type(r) ~= "table" then return r end
    r.bench, r.level = nil, "verify"
    if r.ok then r.stage = "verify" end
    return r
  end},
}

-- A candidate of a batch that --time ended before it was started: the evaluator's answer for
-- it (verdict not_evaluated). It is no evaluation: no id, no archive row, not counted, not
-- remembered (asked again, after a resume with more time, it is evaluated); its journal entry
-- holds it, so a resume and a replay hand the strategy the same batch.
local NOT_EVALUATED = "not_evaluated"
local function not_evaluated(r)
  return type(r) == "table" and r.verdict == NOT_EVALUATED
end

-- kevo.clock's time at which the run's --time ends (nil: no --time), for the evaluator: a
-- candidate of a batch not started by then is not evaluated, so a batch handed over just
-- before the deadline does not run past it. (The evaluator's clock is kevo.clock's; the
-- context's own may be another, a test's.)
function Ctx:_start_by()
  local o = private[self].opts
  if not o.time_s then return nil end
  return require("kevo").clock() + (o.time_s - self:_now())
end

-- Evaluates the batch live; with an archive, records its candidates, evaluations and journal
-- entry in one transaction (a kill leaves all of them or none). Returns ids, results (a
-- candidate --time left unstarted: id false, its not_evaluated result).
function Ctx:_evaluate_live(todo, request)
  local fault = private[self].opts.fault or function() end
  local level = todo[1].level
  local ask = level and LEVELS[level].ask or {}
  ask = {bench = ask.bench, start_by = self:_start_by()}
  local raw = private[self].opts.evaluator.evaluate_many(todo, ask)
  fault("evaluated")
  local results, texts = {}, {}
  for j = 1, #todo do
    local r = raw[j]
    if not_evaluated(r) then
      -- when it ran out, as the evaluator says: before it was started, or while it was being
      -- compiled or judged (cut there)
      local msg = type(r.message) == "string" and r.message or ""
      local when = "before it was started"
      for _, w in ipairs{"while it was being compiled", "while it was being judged"} do
        if msg:find(w, 1, true) then when = w end
      end
      r = {ok = false, verdict = NOT_EVALUATED, stage = "compile", synthetic = r.synthetic,
           message = string.format("not evaluated: the run's time ran out (--time %g s) %s",
                                   private[self].opts.time_s or 0, when)}
    elseif level then
      r = LEVELS[level].mark(r)
    end
    results[j], texts[j] = as_recorded(r)
  end
  local ids = {}
  local db = private[self].opts.archive
  if not db then
    for j = 1, #todo do
      if not_evaluated(results[j]) then
        ids[j] = false
      else
        self._next_id = self._next_id + 1
        ids[j] = self._next_id
      end
    end
    return ids, results
  end
  assert(db:begin())
  local ok, err = pcall(function()
    for j, c in ipairs(todo) do
      if not_evaluated(results[j]) then
        ids[j] = false
      else -- a promotion keeps its candidate
        ids[j] = c.id or assert(db:candidate_add{
          run = self.run, parent = c.parent, origin = c.origin or "unknown", lang = c.lang,
          source = c.source, launch = c.launch, knobs = journal.canonical(c.knobs or {})})
      end
    end
    fault("batch-write")
    for j, r in ipairs(results) do
      if ids[j] then
        assert(db:eval_add{candidate = ids[j], stage = r.stage or "done",
                           verdict = r.verdict or "error", ok = r.ok and true or false,
                           result = texts[j]})
      end
    end
    if private[self].tape then
      private[self].tape:record("evaluate", request,
        {ids = ids, results = results, t = self:_now()})
    end
    assert(db:commit())
  end)
  if not ok then
    db:rollback()
    error(err, 0)
  end
  fault("committed")
  return ids, results
end

-- The batch's answer read back from the journal (a replay after a divergence may lack some:
-- they get negative ids and an E_REPLAY result).
function Ctx:_evaluate_recorded(todo, request)
  local items = eval_items(todo)
  local keys = {}
  for j, it in ipairs(items) do keys[j] = journal.item_key(it) end
  local resp = private[self].tape:take("evaluate", request, keys) or {}
  local ids, results = {}, {}
  for j = 1, #todo do
    ids[j] = resp.ids and resp.ids[j]
    results[j] = resp.results and resp.results[j]
    if not_evaluated(results[j]) and not resp.offline then
      ids[j] = false -- as the run had it: --time ended the batch before this one
    elseif not (ids[j] and results[j]) then
      self._offline_id = self._offline_id - 1
      ids[j] = self._offline_id
      results[j] = json.decode(json.encode(REPLAY_MISS))
    end
  end
  return ids, results
end

-- A batch's evaluated candidate as the context's entry: remembered, counted, maybe the best.
function Ctx:_add_entry(cand, id, r)
  cand.id = id
  local entry = r
  entry.id, entry.candidate, entry.ok = cand.id, cand, r.ok and true or false
  entry.score = score_of(entry)
  entry.n = #self._entries + 1
  self._entries[#self._entries + 1] = entry
  if cand.level then
    self._seen_at[cand.level][candidate_key(cand)] = entry
  else
    self._seen[candidate_key(cand)] = entry
  end
  if not cand.level or not self._by_id[cand.id] then self._by_id[cand.id] = entry end
  self.evals = self.evals + 1
  if entry.score and (not self.best or entry.score > self.best.score) then self.best = entry end
  local fatal = FATAL_VERDICT[entry.verdict]
  if fatal and not self._fatal then
    self._fatal = {reason = fatal, message = entry.message or entry.verdict}
  end
  return entry
end

function Ctx:evaluate(cands, opts)
  if type(cands) ~= "table" then error("ctx:evaluate: a list of candidates expected", 2) end
  if cands.source then cands = {cands} end -- one candidate given bare
  for i, c in ipairs(cands) do check_candidate(c, i) end
  local level
  if opts ~= nil then
    if type(opts) ~= "table" then error("ctx:evaluate: options must be a table", 2) end
    for k in pairs(opts) do
      if k ~= "level" then
        error("ctx:evaluate: unknown option '" .. tostring(k) .. "' (allowed: level)", 2)
      end
    end
    level = opts.level
    if level == "full" then level = nil end
    if level ~= nil and not LEVELS[level] then
      error("ctx:evaluate: level must be 'full' or 'verify', got '" .. tostring(level) .. "'", 2)
    end
  end
  self:_check_stop("evaluate")
  if #cands == 0 then return {} end
  local left = self:budget_left().evals
  local out, todo, todo_pos, cut_at = {}, {}, {}, nil
  local batch_keys = {}
  for i, c in ipairs(cands) do
    local key = candidate_key(c)
    local prev = self._seen[key] or (level and self._seen_at[level][key])
    local cheaper = not level and self._seen_at.verify[key] -- promoted: evaluated again, in full
    if cut_at then
      break -- the budget ends here: the rest is not looked at
    elseif prev then
      out[i] = prev
    elseif batch_keys[key] then
      todo_pos[#todo_pos + 1] = {i, batch_keys[key]}
    elseif left and #todo >= left then
      cut_at = i
    else
      local cand = {lang = c.lang, source = c.source, launch = c.launch, knobs = copy(c.knobs),
                    parent = parent_id(c.parent), origin = c.origin or "unknown",
                    seed = c.seed or (type(c.parent) == "table" and
                           (c.parent.seed or (c.parent.candidate and c.parent.candidate.seed))),
                    level = level}
      if cheaper then -- the candidate it was: same id, parent and origin
        local pc = cheaper.candidate
        cand = {lang = pc.lang, source = pc.source, launch = pc.launch, knobs = copy(pc.knobs),
                parent = pc.parent, origin = pc.origin, seed = pc.seed, id = pc.id}
      end
      todo[#todo + 1] = cand
      batch_keys[key] = #todo
      todo_pos[#todo_pos + 1] = {i, #todo}
    end
  end
  if #todo == 0 then
    -- Only duplicates: free, but a strategy that keeps asking for known points is stuck.
    self._dup_batches = self._dup_batches + 1
    if self._dup_batches >= M.STALL_BATCHES then
      stop("stall", M.STALL_BATCHES .. " batches in a row held no new candidate")
    end
    -- each of those came from a paid call: give up much sooner on a model that only repeats
    local from_llm = false
    for _, c in ipairs(cands) do from_llm = from_llm or c.origin == "llm" end
    self._dup_llm_batches = from_llm and self._dup_llm_batches + 1 or 0
    if self._dup_llm_batches >= M.STALL_LLM_BATCHES then
      stop("stall", "the LLM proposed only known kernels " .. M.STALL_LLM_BATCHES ..
           " times in a row")
    end
    return out
  end
  self._dup_batches, self._dup_llm_batches = 0, 0
  local tape = private[self].tape
  local request = tape and journal.canonical({cands = eval_items(todo)})
  local ids, results
  if tape and not tape:live() then
    ids, results = self:_evaluate_recorded(todo, request)
  else
    ids, results = self:_evaluate_live(todo, request)
  end
  local entries, late = {}, nil
  for j, cand in ipairs(todo) do
    local r = results[j]
    if ids[j] == false then
      -- --time ended the batch first: handed back with its verdict and an id of no candidate
      -- (negative, as a replay's miss: a strategy may key tables by id), nothing else
      self._offline_id = self._offline_id - 1
      r.id, r.candidate, r.ok = self._offline_id, cand, false
      entries[j] = r
      late = late or r
    else
      entries[j] = self:_add_entry(cand, ids[j], r)
    end
  end
  for _, p in ipairs(todo_pos) do out[p[1]] = entries[p[2]] end
  if private[self].opts.on_progress and self:_live() then private[self].opts.on_progress(self) end
  if self._fatal then stop(self._fatal.reason, self._fatal.message) end
  if late then
    -- --time ended inside the batch: as with a budget's cut, the strategy gets the batch (the
    -- unstarted ones marked) and the stop, and is stopped at its next call
    local s = make_stop("time", "--time budget spent")
    self._cut = s
    return out, s
  end
  if cut_at then
    -- The budget ended inside the batch: the strategy gets what was evaluated (candidates
    -- 1 .. cut_at - 1) and the stop, finishes its step, and is stopped at its next call.
    local s = self:_evals_spent()
    self._cut = s
    return out, s
  end
  return out
end

local PROFILE_MAX = 64

-- The profiles of todo (entries) live from the evaluator, or read back from the journal.
function Ctx:_profile_batch(todo, with_ref)
  local ids = {}
  for j, e in ipairs(todo) do ids[j] = e.id end
  local tape = private[self].tape
  local request = tape and journal.canonical({ids = json.array(ids), reference = with_ref})
  if tape and not tape:live() then
    local resp = tape:take("profile", request)
    if not resp then self:_log_offline("no recorded profile for this request") end
    return resp and resp.profiles or {}
  end
  local ev = private[self].opts.evaluator
  local profiles = {}
  if ev.profile_many then
    local cands, bounds = {}, {}
    for j, e in ipairs(todo) do
      cands[j] = e.candidate
      bounds[j] = e.bench and e.bench.bound or "memory"
    end
    profiles = ev.profile_many(cands, {reference = with_ref, bounds = bounds,
                                       deadline = self:_start_by()})
  end
  for j = 1, #todo do
    profiles[j] = profiles[j] or {ok = false, reason = "unsupported",
                                  error = "this evaluator takes no profiles"}
  end
  profiles = json.decode(json.encode(json.array(profiles))) -- what the journal holds
  if tape then tape:record("profile", request, {profiles = profiles, t = self:_now()}) end
  return profiles
end

function Ctx:profile(entries, opts)
  if type(entries) ~= "table" then error("ctx:profile: a list of entries expected", 2) end
  if entries.candidate ~= nil then entries = {entries} end -- one entry given bare
  if #entries > PROFILE_MAX then
    error("ctx:profile: at most " .. PROFILE_MAX .. " entries at once", 2)
  end
  local with_ref = true
  if opts ~= nil then
    if type(opts) ~= "table" then error("ctx:profile: options must be a table", 2) end
    for k in pairs(opts) do
      if k ~= "reference" then
        error("ctx:profile: unknown option '" .. tostring(k) .. "' (allowed: reference)", 2)
      end
    end
    with_ref = opts.reference ~= false
  end
  for i, e in ipairs(entries) do -- only the run's own entries, as the host holds them
    if type(e) ~= "table" or math.type(e.n) ~= "integer" or self._entries[e.n] ~= e then
      error("ctx:profile: entries[" .. i .. "] is not an entry of this run", 2)
    end
  end
  local need = false -- entries profiled before (or that cannot be) are free, even past a budget
  for _, e in ipairs(entries) do
    need = need or (not e.profile and e.ok and e.bench ~= nil and not e.level)
  end
  if need then self:_check_stop("profile") end
  local left = self:budget_left().evals
  local out, todo, pos, cut_at, queued = {}, {}, {}, nil, {}
  for i, e in ipairs(entries) do
    if e.profile then
      out[i] = e.profile
    elseif not (e.ok and e.bench and not e.level) then
      out[i] = {ok = false, reason = "failed",
                error = "only a verified, timed entry is profiled (" .. tostring(e.verdict) .. ")"}
    elseif queued[e] then
      pos[#pos + 1] = {i, queued[e]}
    elseif left and #todo >= left then
      cut_at = i
      break
    else
      todo[#todo + 1] = e
      queued[e] = #todo
      pos[#pos + 1] = {i, #todo}
    end
  end
  if #todo > 0 then
    local profiles = self:_profile_batch(todo, with_ref)
    for j, e in ipairs(todo) do
      local p = profiles[j] or {ok = false, reason = "failed", error = "no profile recorded"}
      e.profile = p -- kevo.prompt gives the model its diagnosis with the entry's result
      self.evals = self.evals + 1
    end
    for _, p in ipairs(pos) do out[p[1]] = todo[p[2]].profile end
  end
  if cut_at then
    local s = self:_evals_spent()
    self._cut = s
    return out, s
  end
  return out
end

function Ctx:propose(parent, feedback, n)
  local p = private[self].opts.proposer
  if not p then return nil end
  n = n or 1
  if math.type(n) ~= "integer" or n < 1 then
    error("ctx:propose: n must be a positive integer", 2)
  end
  local entry = parent and parent.candidate and parent or nil
  local cand = entry and entry.candidate or parent
  if cand ~= nil and (type(cand) ~= "table" or type(cand.source) ~= "string") then
    error("ctx:propose: parent must be an entry, a candidate or nil", 2)
  end
  self:_check_stop("propose")
  local cands, used = self:_propose(p, cand, entry, feedback, n)
  self.tokens = self.tokens + (used or 0)
  local out = {}
  cand = cand or {lang = "cuda"} -- written from the task alone: no parent, no knobs
  for _, c in ipairs(cands or {}) do
    out[#out + 1] =
      {lang = c.lang or cand.lang, source = c.source, launch = c.launch or cand.launch,
                     knobs = c.knobs or copy(cand.knobs), parent = cand.id, origin = "llm",
                     seed = cand.seed}
  end
  self.proposals = self.proposals + #out
  if private[self].opts.on_progress and self:_live() then private[self].opts.on_progress(self) end
  return out
end

-- The proposer's answer (candidates, tokens): asked live and recorded, or read back. A stop
-- the proposer raises (the LLM's token budget) is recorded as the answer too.
function Ctx:_propose(p, cand, entry, feedback, n)
  local tape = private[self].tape
  if not tape then return p.propose(cand, entry, feedback, n, self.task) end
  local request = journal.canonical({
    parent = cand and {id = cand.id, lang = cand.lang, src = journal.digest(cand.source),
                       launch = journal.digest(cand.launch), knobs = knobs_key(cand.knobs)}
      or "none", -- written from the task alone
    feedback = journal.digest(feedback), n = n})
  if not tape:live() then
    local resp = tape:take("propose", request)
    if not resp then
      self:_log_offline("no recorded LLM answer for this request: no candidates")
      return {}, 0
    end
    if type(resp.stop) == "table" then stop(resp.stop.reason, resp.stop.message) end
    return resp.cands or {}, resp.tokens or 0
  end
  local ok, cands, used = pcall(p.propose, cand, entry, feedback, n, self.task)
  if not ok then
    if M.is_stop(cands) then
      tape:record("propose", request, {stop = {reason = cands.reason, message = cands.message},
                                       t = self:_now()})
    end
    error(cands, 0)
  end
  local list = {}
  for i, c in ipairs(cands or {}) do
    list[i] = {lang = c.lang, source = c.source, launch = c.launch, knobs = c.knobs}
  end
  local resp = json.decode(json.encode({cands = json.array(list), tokens = used or 0,
                                        llm_id = p.llm_id and p.llm_id() or nil, t = self:_now()}))
  if private[self].opts.fault then private[self].opts.fault("proposed") end
  tape:record("propose", request, resp)
  return resp.cands, resp.tokens
end

function Ctx:_log_offline(msg)
  if private[self].opts.on_offline then
    private[self].opts.on_offline(msg)
  else
    self:log("replay: %s", msg)
  end
end

function Ctx:history()
  local o = {}
  for i, e in ipairs(self._entries) do o[i] = e end
  return o
end

function Ctx:top(k, entries)
  local ok = {}
  for _, e in ipairs(entries or self._entries) do
    if e.ok and not e.level then ok[#ok + 1] = e end
  end
  table.sort(ok, M.better)
  local o = {}
  for i = 1, math.min(k or #ok, #ok) do o[i] = ok[i] end
  return o
end

function Ctx:entry(id)
  return self._by_id[id]
end

function Ctx:log(fmt, ...)
  local line = select("#", ...) > 0 and string.format(fmt, ...) or tostring(fmt)
  if private[self].opts.on_log then
    private[self].opts.on_log(line)
  else
    require("kevo").log("%s", line)
  end
end

-- The knob space of a seed, an entry or a candidate. A candidate derived from a seed (tuned or
-- rewritten) keeps the seed's knobs whose names still appear in its source.
function Ctx:knob_space(x)
  if type(x) ~= "table" then error("ctx:knob_space: a seed, entry or candidate expected", 2) end
  if x.space then return x.space end
  local c = x.candidate or x
  local seed = c.seed and self.seeds[c.seed]
  if not seed then return {} end
  local out = {}
  for _, k in ipairs(seed.space) do
    if c.source:find("%f[%w_]" .. k.name .. "%f[^%w_]") then out[#out + 1] = k end
  end
  return out
end

function Ctx:space_size(space)
  local n = 1
  for _, k in ipairs(space) do n = n * #k.values end
  return n
end

-- A candidate from a base (a seed, an entry or a candidate) with the given knobs, merged over
-- the base's own point (ctx:default_knobs(ctx:knob_space(base), base)): every knob of its space
-- has a value, so one kernel has one knob table however it was asked for.
function Ctx:candidate(base, knobs, origin)
  if type(base) ~= "table" then error("ctx:candidate: a seed, entry or candidate expected", 2) end
  local c = base.candidate or base
  local merged = self:default_knobs(self:knob_space(base), base)
  for k, v in pairs(c.knobs or {}) do merged[k] = v end
  for k, v in pairs(knobs or {}) do merged[k] = v end
  return {lang = c.lang, source = c.source, launch = c.launch, knobs = merged,
          parent = c.id, origin = origin or "tune", seed = c.seed or base.index}
end

-- The starting point of a space: for each knob, base's own value when it has one in the space
-- (an entry or candidate keeps its knobs), else the default its seed's source gives it (the
-- value the author compiles with, when the space has it), else the space's first value. base:
-- a seed, or an entry or candidate (optional).
function Ctx:default_knobs(space, base)
  local c = base and (base.candidate or base)
  local seed = c and (c.defaults and c or self.seeds[c.seed or c.index or 0])
  local given = seed and seed.defaults or {}
  local own = c and c.knobs or {}
  local k = {}
  for _, knob in ipairs(space) do
    k[knob.name] = knob.values[1]
    local d = given[knob.name]
    for _, v in ipairs(d and knob.values or {}) do
      if tostring(v) == d then k[knob.name] = v end
    end
    for _, v in ipairs(own[knob.name] ~= nil and knob.values or {}) do
      if v == own[knob.name] then k[knob.name] = v end
    end
  end
  return k
end

function Ctx:random_knobs(space, rng)
  rng = rng or self.rng
  local k = {}
  for _, knob in ipairs(space) do k[knob.name] = rng:pick(knob.values) end
  return k
end

-- One candidate per seed at its default knobs. A recipe without seeds (an imported problem)
-- gets n (default 2) candidates the LLM writes from the task alone, or none without an LLM.
function Ctx:seed_candidates(n)
  if #self.seeds == 0 then
    local out = self:propose(nil, nil, n or 2) or {}
    -- no reply held a usable kernel: one more round, whose prompt says why (kevo.run's proposer)
    if #out == 0 and self.llm then out = self:propose(nil, nil, n or 2) or {} end
    return out
  end
  local out = {}
  for i, s in ipairs(self.seeds) do
    out[i] = self:candidate(s, self:default_knobs(s.space, s), "seed")
  end
  return out
end

local function index_of(list, v)
  for i, x in ipairs(list) do if x == v then return i end end
  return nil
end

-- True when this candidate was evaluated in this run already.
function Ctx:known(c)
  return self._seen[candidate_key(c)] ~= nil
end

-- Up to k distinct, not yet evaluated candidates that each change one knob of x to another value (a
-- step of one
-- place in the knob's list when possible, else any value).
function Ctx:neighbors(x, k, rng)
  rng = rng or self.rng
  local c = x.candidate or x
  local space = self:knob_space(x)
  local near, far = {}, {} -- built in space order, then shuffled: deterministic given rng
  for _, knob in ipairs(space) do
    local cur = index_of(knob.values, (c.knobs or {})[knob.name]) or 1
    for j, v in ipairs(knob.values) do
      if j ~= cur and not self:known(self:candidate(x, {[knob.name] = v}, "mutate")) then
        local list = math.abs(j - cur) == 1 and near or far
        list[#list + 1] = {name = knob.name, value = v}
      end
    end
  end
  rng:shuffle(near)
  rng:shuffle(far)
  local out = {}
  for _, list in ipairs({near, far}) do
    for _, m in ipairs(list) do
      if #out >= (k or 1) then return out end
      out[#out + 1] = self:candidate(x, {[m.name] = m.value}, "mutate")
    end
  end
  return out
end

-- Up to n children of an entry: LLM rewrites (fed `feedback`, default the entry's own) when a
-- model is configured, else knob mutations. Strategies use it to work with or without an LLM.
function Ctx:children(entry, n, feedback, rng)
  local c = self:propose(entry, feedback or entry.feedback, n)
  if c then return c end
  return self:neighbors(entry, n, rng)
end

-- Runs fn(...) with a tighter budget (limits.evals: evaluations from now; limits.seconds).
-- Returns true, fn's results when fn returned; false, stop when the phase's own budget (or the
-- token budget, or a stall) ended it. A stop of the whole run and any error propagate.
function Ctx:with_limits(limits, fn, ...)
  local p, saved = self:_push_limits(limits)
  local res = table.pack(pcall(fn, ...))
  self._phase = saved
  return util.end_phase(p.depth, res)
end

-- Opens a with_limits level: returns it and the level it replaces (restore that one by setting
-- ctx._phase back). The strategy process's with_limits opens and closes levels through these.
function Ctx:_push_limits(limits)
  local saved = self._phase
  local p = {parent = saved, depth = (saved and saved.depth or 0) + 1}
  if limits.evals then p.evals_end = self.evals + limits.evals end
  if limits.seconds then p.deadline = self:_now() + limits.seconds end
  if saved then
    if saved.evals_end then p.evals_end = math.min(p.evals_end or math.huge, saved.evals_end) end
    if saved.deadline then p.deadline = math.min(p.deadline or math.huge, saved.deadline) end
  end
  self._phase = p
  return p, saved
end

---------------------------------------------------------------------------------------------
-- The model evaluator (KEVO_EVALUATOR=model:FILE): lua/kevo/model_eval.lua.
local model_eval = require "kevo.model_eval"
M.shape_model_result = model_eval.shape_result
M.model_evaluator = model_eval.evaluator

return M
