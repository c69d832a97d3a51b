-- kevo.run: the driver behind `kevo run` (runtime/cmd_run.c calls main(args, host)).
--
-- It parses the command line, loads the recipe, opens the archive and creates the run row,
-- loads the strategy (a built-in name, a file, or a composition a+b), builds the search context
-- (kevo.search) with the evaluator and the LLM, runs the strategy under the budgets, draws the
-- progress line, and ends with the summary and the best kernel written to a file.
--
-- `host` holds the privileged services cmd_run.c gives this driver only (read_file,
-- write_file, progress, clear_progress, interrupted, getenv, started, tty). The strategy runs in
-- the same sandboxed state but never sees host: it lives in locals here.
local json = require "kevo.json"
local kevo = require "kevo"
local search = require "kevo.search"
local journal = require "kevo.journal"
local verdict = require "kevo.verdict"

local M = {}

local EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

local USAGE = "usage: kevo run RECIPE [--strategy NAME|FILE] [--llm PROVIDER:MODEL] " ..
              "[--budget-tokens N] [--max-evals N] [--time DURATION] [--set KEY=VALUE]... " ..
              "[--seed N] [--db PATH] [--arch sm_XX] [--gpus all|0,1,...] " ..
              "[--eval redis://HOST:PORT/DB [--eval-password-env VAR]] [--out DIR]\n" ..
              "       kevo run --resume RUN [--max-evals N] [--time DURATION] " ..
              "[--budget-tokens N] [--gpus ...] [--eval ...] [--db PATH] [--out DIR] " ..
              "(see kevo run --help)"

local Usage = {}
local function usage_error(fmt, ...)
  error(setmetatable({message = string.format(fmt, ...)}, Usage), 0)
end

-- Why a problem with a PyTorch reference is refused through --eval (kevo suite says it too).
M.TORCH_OVER_REDIS = "is not evaluated through Redis: the reference outputs are made by a " ..
  "PyTorch process sharing the worker's GPU memory and kept in that worker between requests, " ..
  "while a Redis job may go to any worker (docs/redis.md); judge such problems with --gpus on " ..
  "a GPU host"

-- Whether e is a usage error (kevo suite tells them from failures the same way).
function M.is_usage(e) return getmetatable(e) == Usage end

-- "90", "90s", "20m", "1h30m", "1.5h" -> seconds
function M.parse_duration(s)
  if type(s) ~= "string" or s == "" then return nil end
  local total, rest = 0, s
  if rest:match("^%d+%.?%d*$") then return tonumber(rest) end
  while rest ~= "" do
    local num, unit, after = rest:match("^(%d+%.?%d*)([hms])(.*)$")
    if not num then return nil end
    total = total + tonumber(num) * ({h = 3600, m = 60, s = 1})[unit]
    rest = after
  end
  return total
end

local function parse_value(v)
  if v == "true" then return true elseif v == "false" then return false end
  return math.tointeger(tonumber(v)) or tonumber(v) or v
end

local function positive_int(flag, v)
  local n = math.tointeger(tonumber(v))
  if not n or n < 1 then usage_error("%s takes a positive integer, got '%s'", flag, tostring(v)) end
  return n
end

-- nil when v is a GPU list --gpus takes ("all", or GPU numbers separated by commas, each
-- once), else what is wrong with it.
function M.gpus_problem(v)
  v = tostring(v)
  if v == "all" then return nil end
  if not v:match("^%d+$") and not v:match("^%d+[%d,]*%d$") or v:find(",,", 1, true) then
    return "takes all or GPU numbers separated by commas (0,2,3), got '" .. v .. "'"
  end
  local seen = {}
  for n in v:gmatch("%d+") do
    if seen[tonumber(n)] then return "'" .. v .. "': GPU " .. n .. " twice" end
    seen[tonumber(n)] = true
  end
  return nil
end

-- The options kevo run takes, each with a value (kevo suite passes them on to every problem's
-- run, --resume aside).
M.TAKES = {["--strategy"] = true, ["--llm"] = true, ["--budget-tokens"] = true,
           ["--max-evals"] = true, ["--time"] = true, ["--set"] = true, ["--seed"] = true,
           ["--db"] = true, ["--arch"] = true, ["--out"] = true, ["--resume"] = true,
           ["--gpus"] = true, ["--eval"] = true, ["--eval-password-env"] = true}

-- Parses argv (a list) into a config table; raises a Usage error on bad usage.
function M.parse_args(argv)
  local cfg = {sets = {}, seed = 1}
  local takes = M.TAKES
  local given = {}
  local i = 1
  while i <= #argv do
    local a = argv[i]
    local flag, val = a:match("^(%-%-[%w-]+)=(.*)$")
    if not flag then flag = a end
    if flag:sub(1, 2) == "--" then
      if not takes[flag] then usage_error("unknown option '%s'", flag) end
      if not val then
        i = i + 1
        val = argv[i]
        if val == nil then usage_error("%s needs a value", flag) end
      end
      given[#given + 1] = flag
      if flag == "--strategy" then cfg.strategy = val
      elseif flag == "--resume" then
        cfg.resume = math.tointeger(tonumber(val))
        if not cfg.resume or cfg.resume < 1 then
          usage_error("--resume takes a run id, got '%s'", val)
        end
      elseif flag == "--llm" then
        local provider, model = val:match("^([%w_.-]+):(.+)$")
        if not provider then usage_error("--llm takes PROVIDER:MODEL, got '%s'", val) end
        cfg.llm = {provider = provider, model = model}
      elseif flag == "--budget-tokens" then cfg.max_tokens = positive_int(flag, val)
      elseif flag == "--max-evals" then cfg.max_evals = positive_int(flag, val)
      elseif flag == "--time" then
        cfg.time_s = M.parse_duration(val)
        if not cfg.time_s or cfg.time_s <= 0 then
          usage_error("--time takes a duration such as 90s, 20m or 1h30m, got '%s'", val)
        end
      elseif flag == "--set" then
        local k, v = val:match("^([%w_.:]+)=(.*)$")
        if not k then usage_error("--set takes KEY=VALUE, got '%s'", val) end
        cfg.sets[#cfg.sets + 1] = {key = k, value = parse_value(v)}
      elseif flag == "--seed" then
        cfg.seed = math.tointeger(tonumber(val))
        if not cfg.seed or cfg.seed < 0 then usage_error("--seed takes a non-negative integer") end
      elseif flag == "--db" then cfg.db = val
      elseif flag == "--arch" then
        local okc, cuda = pcall(require, "kevo.cuda")
        local good, why
        if okc then good, why = cuda.check_arch(val) else good = val:match("^sm_%d+[af]?$") end
        if not good then
          -- "--arch 'sm_1': expected sm_NN or sm_NNa (like sm_90)", or what NVRTC supports
          usage_error("--%s",
            why and why:gsub("^E_%u+: ", "") or ("arch '" .. val .. "': expected sm_NN"))
        end
        cfg.arch = val
      elseif flag == "--out" then cfg.out = val
      elseif flag == "--gpus" then
        local bad = M.gpus_problem(val)
        if bad then usage_error("--gpus %s", bad) end
        cfg.gpus = val
      elseif flag == "--eval" then
        -- Redis workers on GPU hosts (docs/redis.md); the URL is recorded with the run, so a
        -- password never goes in it
        if not val:match("^redis://") then
          usage_error("--eval takes redis://HOST:PORT/DB, got '%s'", val)
        end
        if val:match("^redis://[^/@]*:[^/@]*@") then
          usage_error("--eval: put the Redis password in a variable and name it with " ..
                      "--eval-password-env VAR, not in the URL")
        end
        cfg.eval = val
      elseif flag == "--eval-password-env" then cfg.eval_password_env = val
      end
    elseif cfg.recipe then
      usage_error("one recipe expected, got '%s' and '%s'", cfg.recipe, a)
    else
      cfg.recipe = a
    end
    i = i + 1
  end
  if cfg.resume then
    -- the run's recipe, strategy, options, seed and LLM are its own; budgets may be extended
    if cfg.recipe then
      usage_error("--resume takes the recipe from run %d: drop '%s'", cfg.resume, cfg.recipe)
    end
    for _, f in ipairs(given) do
      if f == "--strategy" or f == "--llm" or f == "--set" or f == "--seed" or f == "--arch" then
        usage_error("--resume takes %s from run %d (recorded when it started): drop %s",
                    f:sub(3), cfg.resume, f)
      end
    end
    cfg.seed = nil
  elseif not cfg.recipe then
    usage_error("a recipe is required")
  end
  return cfg
end

-- What an option value must be, from the strategy's `option_values` (docs/strategies.md):
-- nil when v is that, else what is allowed. A spec is "count" (an integer >= 1), "positive" (a
-- number > 0), "nonnegative" (a number >= 0), "fraction" (a number from 0 to 1), a list of the
-- words allowed, or a function(v) -> nil | what is allowed.
local function option_problem(spec, v)
  if type(spec) == "function" then return spec(v) end
  if type(spec) == "table" then
    for _, w in ipairs(spec) do if v == w then return nil end end
    return "one of " .. table.concat(spec, ", ")
  end
  local n = type(v) == "number" and v == v and math.abs(v) < math.huge and v or nil
  if spec == "count" then
    return not (math.type(n) == "integer" and n >= 1) and "an integer >= 1" or nil
  elseif spec == "positive" then
    return not (n and n > 0) and "a number > 0" or nil
  elseif spec == "nonnegative" then
    return not (n and n >= 0) and "a number >= 0" or nil
  elseif spec == "fraction" then
    return not (n and n >= 0 and n <= 1) and "a number from 0 to 1" or nil
  end
  return nil -- a spec this kevo does not know checks nothing
end

-- Refuses (exit 2) an option value its strategy says it does not take, before any run exists.
local function check_option(strategy_t, key, set)
  local spec = type(strategy_t.option_values) == "table" and strategy_t.option_values[key]
  if spec == nil then return end
  local want = option_problem(spec, set.value)
  if want then
    usage_error("--set %s=%s: %s's %s must be %s", set.key, tostring(set.value), strategy_t.name,
                key, want)
  end
end

-- The text of the strategy called `name` as this project sees it: ./strategies/NAME.lua (the
-- project's own, as `kevo list` shows them, in the place of a built-in of the same name), else
-- the built-in one. Returns text, chunkname, or nil, message. The host reads the file: a
-- strategy that loads another by name (strategy.load) is handed its text and never names a
-- path, so all it can reach is what the user put in ./strategies or kevo carries.
function M.strategy_source(name, host)
  if type(name) ~= "string" or not name:match("^[%w_][%w_.-]*$") or #name > 200 then
    return nil, "'" .. tostring(name) .. "' is not a strategy name (letters, digits, '_', '.', " ..
                "'-'): put the file in ./strategies/ and load it by name, or compose files on " ..
                "the command line (--strategy ./a.lua+b)"
  end
  local path = "strategies/" .. name .. ".lua"
  local text, err = host.read_file(path)
  if text then return text, "@" .. path end
  if not tostring(err):find("No such file", 1, true) then return nil, tostring(err) end
  local core = require "kevo.strategy_core"
  local builtin, where = core.source(name)
  if builtin then return builtin, "@" .. where end
  return nil,
    "no strategy named '" .. name .. "' (./strategies/" .. name .. ".lua, or built in: " ..
              table.concat(core.list(), ", ") .. "; or give a file path)"
end

-- The strategy for --strategy: a name (./strategies/NAME.lua, else built in), a .lua file, or
-- parts joined by '+'. It is loaded and run in a process of its own (kevo.boundary): no
-- strategy code runs here; the process gets the texts, and strategy.load(NAME) there asks the
-- host for M.strategy_source(NAME).
-- Returns the strategy (its run(ctx, opts) serves that process) and its options (the first
-- part's, or {} for a composition, whose parts get theirs in the process).
-- popts: seed (the run's), cpu_s, interrupted() (Ctrl-C), on_log(line).
local function load_strategy(spec, sets, host, popts)
  local parts = {}
  for p in spec:gmatch("[^+]+") do parts[#parts + 1] = p end
  if #parts == 0 then usage_error("--strategy is empty") end
  if spec:find("^%+") or spec:find("%+$") or spec:find("%+%+") then
    usage_error("--strategy %s: an empty part (parts are joined by one '+', as in beam+autotune)",
      spec)
  end
  local specs = {}
  for i, p in ipairs(parts) do
    if p:find("/") or p:match("%.lua$") then
      local text, err = host.read_file(p)
      if not text then usage_error("--strategy %s: %s", p, err) end
      specs[i] = {source = text, chunk = "@" .. p}
    else
      local text, chunk = M.strategy_source(p, host)
      if not text then usage_error("--strategy %s: %s", p, chunk) end
      specs[i] = {source = text, chunk = chunk}
    end
  end
  popts = popts or {}
  -- KEVO_STRATEGY_MEM_MB: the strategy process's memory cap (tests make memory bombs quick)
  local mem = math.tointeger(tonumber(host.getenv and host.getenv("KEVO_STRATEGY_MEM_MB") or ""))
  local okl, strat = pcall(require("kevo.boundary").load, specs, {
    seed = popts.seed, cpu_s = popts.cpu_s, interrupted = host.interrupted,
    source = function(name) return M.strategy_source(name, host) end,
    mem_bytes = mem and mem > 0 and (mem << 20) or nil,
    stats = host.getenv ~= nil and
      host.getenv("KEVO_BOUNDARY_STATS") == "1", -- bench/ctx_roundtrip.sh
    on_log = popts.on_log or function(line)
      host.clear_progress()
      kevo.log("%s", line)
    end})
  if not okl then
    if type(strat) == "table" and strat.usage then
      usage_error("--strategy %s: %s", spec, strat.usage)
    end
    error(strat, 0)
  end
  local loaded = {}
  for i, p in ipairs(strat.parts) do loaded[i] = {strategy = p, opts = {}} end
  -- --set KEY=V applies to every part; --set NAME.KEY=V to the part called NAME
  local okset, serr = pcall(function()
    for _, set in ipairs(sets) do
      local target, key = set.key:match("^([^.]+)%.(.+)$")
      local hit = false
      for _, part in ipairs(loaded) do
        if not target or target == part.strategy.name then
          local k = key or set.key
          local allowed = part.strategy.options
          if allowed and not target and #loaded > 1 then
            local known = false
            for _, a in ipairs(allowed) do known = known or a == k end
            if known then
            check_option(part.strategy, k, set)
            part.opts[k] = set.value
            hit = true
          end
          else
            if allowed then
              local known = false
              for _, a in ipairs(allowed) do known = known or a == k end
              if not known then
                usage_error("--set %s: %s has no option '%s' (options: %s)", set.key,
                            part.strategy.name, k, table.concat(allowed, ", "))
              end
            end
            check_option(part.strategy, k, set)
            part.opts[k] = set.value
            hit = true
          end
        end
      end
      if not hit then usage_error("--set %s: no strategy part takes it", set.key) end
    end
  end)
  if not okset then
    strat.session:finish(0)
    error(serr, 0)
  end
  local per_part = {}
  for i, part in ipairs(loaded) do per_part[i] = part.opts end
  local serve = strat.run
  strat.run = function(ctx) return serve(ctx, json.array(per_part)) end
  return strat, #loaded == 1 and loaded[1].opts or {}
end

-- Seeds for the context from the loaded recipe: source text read when the loader gave a path.
local function task_seeds(task, host)
  local seeds = {}
  for i, s in ipairs(task.seeds or {}) do
    local source = s.source
    if not source and s.file then
      local err
      source, err = host.read_file(s.file)
      if not source then usage_error("seed %d: %s", i, err) end
    end
    -- the loader gives space = {NAME = {values}} and knobs = {names in file order}
    local space = s.space
    if type(s.knobs) == "table" and type(s.space) == "table" and type(s.knobs[1]) == "string" then
      space = {}
      for j, name in ipairs(s.knobs) do space[j] = {name = name, values = s.space[name]} end
    end
    seeds[i] = {lang = s.lang, source = source, launch = s.launch, file = s.file, space = space,
                defaults = require("kevo.recipe").knob_defaults(s.lang, source)}
  end
  return seeds
end

local function load_task(spec, host)
  local ok, recipe = pcall(function() return require "kevo.recipe" end)
  if not ok then
    usage_error("this build has no recipe loader (kevo.recipe): %s", tostring(recipe))
  end
  local path = spec
  if recipe.find then
    local found, msg = recipe.find(spec)
    if not found then usage_error("%s", msg) end
    path = found
  end
  local task, msg = recipe.load(path)
  if not task then usage_error("%s", msg) end
  return task, path
end

-- The evaluator: the GPU one, or the model named by spec (KEVO_EVALUATOR=model:FILE).
-- KEVO_MODEL_DELAY=SECONDS makes the model take that long per candidate (tests that kill a
-- run during an evaluation).
local function make_evaluator(task, cfg, host, spec)
  if spec and spec ~= "" then
    local file = spec:match("^model:(.+)$")
    if not file then usage_error("KEVO_EVALUATOR must be model:FILE, got '%s'", spec) end
    local text, err = host.read_file(file)
    if not text then usage_error("KEVO_EVALUATOR: %s", err) end
    local chunk, lerr = load(text, "@" .. file, "t")
    if not chunk then usage_error("KEVO_EVALUATOR: %s", lerr) end
    local okm, model = pcall(chunk)
    if not okm or type(model) ~= "function" then
      usage_error("KEVO_EVALUATOR: %s must return a function(candidate, task)", file)
    end
    local delay = tonumber(host.getenv("KEVO_MODEL_DELAY") or "")
    if delay and delay > 0 then -- each candidate takes that long, as a real one would
      local inner = model
      model = function(c, t)
        host.sleep(delay)
        return inner(c, t)
      end
    end
    return search.model_evaluator(model, task), "model " .. file
  end
  local ok, evaluator = pcall(function() return require "kevo.evaluator" end)
  if not ok then
    error("this build has no evaluator (kevo.evaluator): " .. tostring(evaluator), 0)
  end
  if cfg.gpus and cfg.eval then
    usage_error("--gpus and --eval exclude each other: the GPUs of --eval are its workers'")
  end
  if cfg.eval and type(task.reference) == "table" and task.reference.lang == "torch" then
    usage_error("--eval: %s has a PyTorch reference (a KernelBench problem), which %s",
                task.name or cfg.recipe, M.TORCH_OVER_REDIS)
  end
  if cfg.eval_password_env and not cfg.eval then
    usage_error("--eval-password-env names the password of --eval's Redis: --eval is missing")
  end
  local ev, msg, code = evaluator.new{recipe = task, arch = cfg.arch, gpus = cfg.gpus,
                                      eval = cfg.eval, eval_password_env = cfg.eval_password_env}
  if not ev then
    if code == "E_NOGPU" then error("verification needs a GPU: " .. tostring(msg), 0) end
    error(cfg.eval and tostring(msg):gsub("^E_%u+: ", "") or tostring(msg), 0)
  end
  if cfg.gpus or cfg.eval then -- every worker greeted now: GPUs of two models are refused
    local dev, dmsg, dcode = ev:device()
    if not dev and dcode ~= "E_NOGPU" then
      ev:close()
      error(tostring(dmsg):gsub("^E_%u+: ", ""), 0)
    end
  end
  return {
    -- ask: nil, or {bench = false} for a cheaper level (kevo.search LEVELS: verify only),
    -- start_by = (kevo.clock's time after which no candidate is started: --time)
    evaluate_many = function(list, ask)
      local clean = {}
      for i, c in ipairs(list) do
        clean[i] = {lang = c.lang, source = c.source, launch = c.launch, knobs = c.knobs,
                    bench = ask and ask.bench}
      end
      return ev:evaluate_many(clean, {start_by = ask and ask.start_by})
    end,
    -- the profile stage (docs/profile.md): opts {reference =, bounds = {...}}
    -- opts.deadline (kevo.clock's seconds: --time's end): each ncu run of at most 12 (the
    -- evaluator's) is given what is left as its deadline (the worker kills ncu there), and
    -- none starts after it: its candidates are not profiled, reason "timeout"
    profile_many = function(list, opts)
      opts = opts or {}
      local clean = {}
      for i, c in ipairs(list) do
        clean[i] = {lang = c.lang, source = c.source, launch = c.launch, knobs = c.knobs}
      end
      if not opts.deadline then
        return ev:profile(clean, {reference = opts.reference, bounds = opts.bounds})
      end
      local out = {}
      for from = 1, #clean, 12 do
        local part, bounds = {}, opts.bounds and {} or nil
        for i = from, math.min(from + 11, #clean) do
          part[#part + 1] = clean[i]
          if bounds then bounds[#bounds + 1] = opts.bounds[i] end
        end
        local left_ms = math.floor((opts.deadline - kevo.clock()) * 1000)
        local got = {}
        if left_ms > 0 then
          got = ev:profile(part, {reference = opts.reference, bounds = bounds,
                                  deadline_ms = math.min(left_ms, 600000)}) or {}
        end
        for j = 1, #part do
          out[from + j - 1] = got[j] or {ok = false, reason = "timeout",
                                          error = "not profiled: the run's time ran out (--time)"}
        end
      end
      return out
    end,
    close = function() if ev.close then ev:close() end end,
    workers = ev:stats().workers,
  }, "gpu"
end

-- What kevo.llm's session sees as the archive: the real one, keeping the id of the last
-- llm_calls row the run wrote or, resuming, settled again from the archive (the proposal's
-- journal entry records it as llm_id: a later resume starts past it).
local function llm_archive(db, state)
  return {
    llm_call_add = function(_, spec)
      local id, msg, code = db:llm_call_add(spec)
      if id then state.last_id = math.max(state.last_id or 0, id) end
      return id, msg, code
    end,
    llm_call_lookup = function(_, request, range)
      local raw, row = db:llm_call_lookup(request, range)
      if range and type(row) == "table" then state.last_id = math.max(state.last_id, row.id) end
      return raw, row
    end,
  }
end

-- The proposer: LLM rewrites through kevo.llm (configured by the host: the sandbox reads no
-- files), kevo.prompt and kevo.extract. llm_state: the llm_archive bookkeeping.
local function make_proposer(llm_cfg, ctx_ref, llm_state)
  if not llm_cfg then return nil end
  local llm = require "kevo.llm"
  local prompt = require "kevo.prompt"
  local extract = require "kevo.extract"
  local unusable -- why the last unusable reply was refused: the next prompt says it
  return {
    propose = function(parent, entry, feedback, n, task)
      local notes = {}
      if unusable then
        notes[#notes + 1] = "An earlier answer could not be used: " .. unusable
        unusable = nil
      end
      if parent and parent.knobs and next(parent.knobs) then
        notes[#notes + 1] = "It was compiled with these knob values (-D defines for CUDA, " ..
          "constexpr arguments for Triton): " .. search.knobs_key(parent.knobs) ..
          ". Keep a knob's name if your kernel still uses it."
      end
      if feedback and (not entry or feedback ~= entry.feedback) then
        notes[#notes + 1] = feedback
      end
      local lang = parent and parent.lang or "cuda" -- no parent: written from the task alone
      local messages = prompt.messages{
        task = task, lang = lang,
        best = parent and {source = parent.source, launch = parent.launch, result = entry},
        notes = #notes > 0 and table.concat(notes, "\n\n") or nil}
      -- --time holds against an answer still to come: the request gets what is left of it
      local deadline = ctx_ref.ctx:_start_by()
      local replies, msg, code = llm.generate{messages = messages, n = n, deadline = deadline}
      if not replies then
        if code == "E_BUDGET" then search.stop("tokens", msg) end
        if code == "E_TIMEOUT" and deadline and kevo.clock() >= deadline then
          search.stop("time", "--time budget spent while the model was answering")
        end
        ctx_ref.ctx:log("llm: %s", msg)
        return {}, 0
      end
      local u = replies.usage or {}
      -- a reply a resume settled again from the archive counts what it cost when it was paid
      local tokens = (u.input_tokens or 0) + (u.output_tokens or 0)
      local out = {}
      for _, r in ipairs(replies) do
        local pick, why = extract.best(r, lang)
        if pick then
          out[#out + 1] = {lang = pick.lang, source = pick.source, launch = pick.launch}
        else
          unusable = why
          ctx_ref.ctx:log("llm: a reply held no kernel (%s)", (tostring(why):gsub("\n.*", "")))
        end
      end
      return out, tokens
    end,
    llm_id = function() return llm_state.last_id end,
  }
end

local function fmt_elapsed(s)
  s = math.floor(s)
  if s >= 3600 then return string.format("%d:%02d:%02d", s // 3600, s % 3600 // 60, s % 60) end
  return string.format("%d:%02d", s // 60, s % 60)
end

local function fmt_tokens(n)
  if n >= 1e6 then return string.format("%.1fM", n / 1e6) end
  if n >= 1e3 then return string.format("%.1fk", n / 1e3) end
  return tostring(n)
end

-- The progress line: evaluations, best speed-up, % of roofline, tokens, elapsed.
function M.progress_line(ctx, run_id)
  local ok = 0
  for _, e in ipairs(ctx._entries) do if e.ok then ok = ok + 1 end end
  local o = ctx:limits()
  local parts = {string.format("kevo run %s", tostring(run_id)),
                 string.format("evals %d%s (%d ok)", ctx.evals,
                               o.max_evals and ("/" .. o.max_evals) or "", ok)}
  local b = ctx.best
  if b then
    local bench = b.bench or {}
    parts[#parts + 1] = string.format("best %.2fx%s%s", b.score or 0,
      bench.median_ms and string.format(" %.4g ms", bench.median_ms) or "",
      bench.roofline_pct and string.format(" %.0f%% roofline", bench.roofline_pct) or "")
  else
    parts[#parts + 1] = "best -"
  end
  if ctx.llm then
    parts[#parts + 1] = "tokens " .. fmt_tokens(ctx.tokens) ..
                        (o.max_tokens and ("/" .. fmt_tokens(o.max_tokens)) or "")
  end
  parts[#parts + 1] =
    fmt_elapsed(ctx:elapsed()) .. (o.time_s and ("/" .. fmt_elapsed(o.time_s)) or "")
  return table.concat(parts, "  ")
end

local EXT = {cuda = "cu", triton = "py"}

-- Writes the best kernel (source, launch chunk, provenance); returns the source's path.
local function write_best(ctx, cfg, run_id, recipe_name, host)
  local b = ctx.best
  local dir = (cfg.out or "kevo-out") .. "/" .. tostring(run_id)
  local c = b.candidate
  local path = dir .. "/best." .. (EXT[c.lang] or "txt")
  local src = c.source
  if c.knobs and next(c.knobs) then
    src = (c.lang == "cuda" and "// kevo knobs: " or "# kevo knobs: ") ..
      search.knobs_key(c.knobs) ..
          "\n" .. src
  end
  local ok, err = host.write_file(path, src)
  if not ok then return nil, err end
  if c.launch then host.write_file(dir .. "/best.launch.lua", c.launch) end
  host.write_file(dir .. "/best.json", json.encode({
    run = run_id, recipe = recipe_name, candidate = b.id, lang = c.lang, knobs = c.knobs,
    speedup = b.score, median_ms = b.bench and b.bench.median_ms,
    ref_median_ms = b.bench and b.bench.ref_median_ms,
    roofline_pct = b.bench and b.bench.roofline_pct, synthetic = b.synthetic or nil,
  }, {pretty = true}) .. "\n")
  return path
end

-- main(argv, host) -> exit code
function M.main(argv, host)
  local okp, cfg = pcall(M.parse_args, argv)
  if not okp then
    if getmetatable(cfg) == Usage then
      kevo.log("kevo run: %s\n%s", cfg.message, USAGE)
      return EXIT_USAGE
    end
    error(cfg, 0)
  end
  local okr, rc = pcall(M.execute, cfg, host)
  if okr then return rc end
  host.clear_progress()
  if getmetatable(rc) == Usage then
    kevo.log("kevo run: %s", rc.message)
    return EXIT_USAGE
  end
  -- a failure setting the run up (no evaluator, no GPU, a broken archive): said plainly
  kevo.log("kevo run: %s", tostring(rc))
  if M.open_run then
    local ok, archive = pcall(function() return require "kevo.archive" end)
    local db = ok and archive.open(M.open_run.db)
    if db then db:run_finish(M.open_run.id, "failed"); db:close() end
    M.open_run = nil
  end
  return EXIT_FAILED
end

-- The test hook KEVO_FAULT=POINT[:N]: kevo kills itself (SIGKILL) the Nth time (default the
-- first) the run passes POINT: evaluated (results in hand, nothing written), batch-write (in
-- the middle of a batch's transaction), committed (a batch written, the strategy not told),
-- proposed (LLM replies stored in llm_calls, not journaled). docs/resume.md.
local function make_fault(host)
  local spec = host.getenv("KEVO_FAULT")
  if not spec or spec == "" then return nil end
  local point, nth = spec:match("^([%w_-]+):?(%d*)$")
  if not point then usage_error("KEVO_FAULT takes POINT[:N], got '%s'", spec) end
  nth = tonumber(nth) or 1
  local seen = 0
  return function(p)
    if p ~= point then return end
    seen = seen + 1
    if seen == nth then host.die() end
  end
end

-- The settings an existing run recorded when it started (kevo run --resume, kevo replay):
-- its row, its config (recipe, strategy, sets, budgets, llm, evaluator_spec) and the length
-- of its journal.
function M.recorded(db, id)
  local row = db:run(id)
  if not row then usage_error("no run %d in the archive %s", id, db:path()) end
  local config = json.decode(row.config or "null")
  if type(config) == "table" and config.kind == "suite" then
    usage_error("run %d is a suite: kevo suite --resume %d goes on with it", id, id)
  end
  if type(config) ~= "table" or type(config.sets) ~= "table" or not config.strategy then
    usage_error("run %d was made by a kevo that did not record its settings: it cannot be " ..
                "resumed or replayed", id)
  end
  local n = assert(db:journal_count(id))
  if n == 0 and (row.candidates or 0) > 0 then
    usage_error("run %d has candidates but no journal: it cannot be resumed or replayed", id)
  end
  return row, config, n
end

-- An archive that does not open (corrupt, locked, newer, not SQLite) fails the job (exit 1, as
-- docs/archive.md says for every command): the user typed nothing wrong. The message already
-- names the archive and what to do.
function M.archive_failed(msg)
  error((tostring(msg):gsub("^E_%u+: ", "")), 0)
end

-- The strategy process's CPU-time limit: strategies compute little (the host does the work),
-- so an hour, or the run's time budget and a minute when that is longer.
function M.cpu_limit(budgets)
  return math.max(3600, math.ceil((budgets and budgets.time_s or 0) + 60))
end

M.usage_error = usage_error
M.load_task = load_task
M.load_strategy = load_strategy
M.task_seeds = task_seeds

local function llm_name(l)
  return l and (l.provider .. ":" .. l.model) or nil
end

-- Reads what the run needs before it starts: the archive (a resumed run's settings from it), the
-- task, the LLM settings, budgets, strategy, seeds and evaluator. Raises usage errors.
local function prepare(cfg, host)
  local archive = require "kevo.archive"
  local dbpath = cfg.db or archive.default_path()
  local db, row, rec
  if cfg.resume then
    local dberr
    db, dberr = archive.open(dbpath)
    if not db then M.archive_failed(dberr) end
    row, rec = M.recorded(db, cfg.resume)
    cfg.recipe, cfg.strategy, cfg.sets, cfg.arch = rec.recipe, rec.strategy, rec.sets, rec.arch
    -- the GPUs may change (--gpus, or --eval's workers): results do not depend on them
    if not cfg.eval then cfg.gpus = cfg.gpus or rec.gpus end
    cfg.seed = row.seed or 1
    math.randomseed(cfg.seed) -- what the sandbox got from --seed when the run started
  end
  local task, recipe_path = load_task(cfg.recipe, host)
  local llm_json, llm_err = host.llm_config, host.llm_config_error
  if rec then
    llm_json, llm_err = nil, nil
    if rec.llm then llm_json, llm_err = host.resolve_llm(rec.llm) end
  end
  if llm_err then usage_error("LLM settings: %s", llm_err) end
  local llm_cfg
  if llm_json then
    llm_cfg = json.decode(llm_json)
    if type(llm_cfg) ~= "table" or type(llm_cfg.model) ~= "string" then llm_cfg = nil end
  end
  if cfg.llm and not llm_cfg then usage_error("--llm: the LLM settings did not resolve") end
  if rec and rec.llm and not llm_cfg then
    usage_error("LLM %s: the settings did not resolve", rec.llm)
  end
  local budgets = {max_evals = cfg.max_evals, time_s = cfg.time_s,
                   max_tokens = llm_cfg and (cfg.max_tokens or llm_cfg.budget_tokens) or nil}
  if rec then -- replay under the run's own budgets; extensions apply once it goes live
    budgets = {max_evals = rec.max_evals, time_s = rec.time_s, max_tokens = rec.max_tokens}
  end
  local strat, sopts = load_strategy(cfg.strategy or (llm_cfg and "greedy" or "autotune"),
                                     cfg.sets, host,
                                     {seed = cfg.seed, cpu_s = M.cpu_limit(budgets)})
  local seeds = task_seeds(task, host)
  if #seeds == 0 and not llm_cfg then
    usage_error("%s has no seed kernels to tune; configure an LLM (--llm provider:model, or llm = "
                .. "in kevo.conf; docs/llm.md) so kevo can write candidates", recipe_path)
  end
  local ref = task.reference
  if type(ref) == "table" and ref.lang == "torch" and ref.file and not ref.source then
    -- the PyTorch problem is the specification the LLM writes kernels to (kevo.prompt)
    ref.source = host.read_file(ref.file)
  end
  if host.gpus_config_error then usage_error("%s", host.gpus_config_error) end
  if not cfg.gpus and host.gpus_config then
    local bad = M.gpus_problem(host.gpus_config)
    if bad then usage_error("kevo.conf: gpus %s", bad) end
    cfg.gpus = host.gpus_config
  end
  local espec = host.getenv("KEVO_EVALUATOR")
  if espec == "" then espec = nil end
  if rec then
    if espec and espec ~= rec.evaluator_spec then
      usage_error("run %d was evaluated by %s: resuming it with KEVO_EVALUATOR=%s would mix " ..
                  "another evaluator's results into it", cfg.resume,
                  rec.evaluator_spec or "the GPU", espec)
    end
    espec = rec.evaluator_spec
  end
  local evaluator, evaluator_name = make_evaluator(task, cfg, host, espec)
  if not db then
    local dberr
    db, dberr = archive.open(dbpath)
    if not db then M.archive_failed(dberr) end
  end
  local recipe_name = task.name or recipe_path
  return {dbpath = dbpath, db = db, row = row, rec = rec, task = task, recipe_path = recipe_path,
          llm_cfg = llm_cfg, budgets = budgets, strat = strat, sopts = sopts, seeds = seeds,
          espec = espec, evaluator = evaluator, evaluator_name = evaluator_name,
          recipe_name = recipe_name}
end

-- The run's id and journal: a new run, or the resumed one read back.
local function open_tape(r, cfg, host)
  local db, rec, row, dbpath = r.db, r.rec, r.row, r.dbpath
  local strat, sopts, budgets, llm_cfg = r.strat, r.sopts, r.budgets, r.llm_cfg
  local recipe_name, recipe_path = r.recipe_name, r.recipe_path
  local evaluator_name, espec = r.evaluator_name, r.espec
  local run_id, tape
  if rec then
    run_id = cfg.resume
    if row.status == "running" then
      kevo.log("kevo run: run %d is marked running: resuming it as a run whose kevo died " ..
               "(if that kevo still runs, stop it first)", run_id)
    end
    tape = journal.open{db = db, run = run_id, mode = "resume"}
  else
    run_id = assert(db:run_create{
      recipe = recipe_name, recipe_path = recipe_path, strategy = strat.name, seed = cfg.seed,
      config = journal.canonical({recipe = recipe_path, strategy = cfg.strategy or strat.name,
                                  opts = sopts, sets = json.array(cfg.sets),
                                  max_tokens = budgets.max_tokens, llm = llm_name(llm_cfg),
                                  max_evals = cfg.max_evals, time_s = cfg.time_s, arch = cfg.arch,
                                  gpus = cfg.gpus, suite = cfg.suite,
                                  evaluator = evaluator_name, evaluator_spec = espec}),
    })
    M.open_run = {db = dbpath, id = run_id}
    host.started(dbpath, run_id)
    tape = journal.open{db = db, run = run_id, mode = "live"}
  end
  r.run_id, r.tape = run_id, tape
end

-- The search context, with the LLM configured, progress and log lines wired to the host, and
-- (resuming) the switch to live once the journal is read back (it sets r.resumed_at).
local function make_context(r, cfg, host)
  local db, rec, row, dbpath, run_id, tape = r.db, r.rec, r.row, r.dbpath, r.run_id, r.tape
  local task, seeds, evaluator = r.task, r.seeds, r.evaluator
  local budgets, llm_cfg = r.budgets, r.llm_cfg
  local llm_state = {last_id = 0}
  local function configure_llm(budget, resume)
    if not llm_cfg then return end
    require("kevo.llm").configure{config = llm_cfg, archive = llm_archive(db, llm_state),
                                  run = run_id, budget_tokens = budget, resume = resume}
  end
  if not rec then configure_llm(budgets.max_tokens) end

  local ctx_ref = {}
  local last_draw = -1
  local ctx_opts
  ctx_opts = {
    task = task, seeds = seeds, evaluator = evaluator,
    proposer = make_proposer(llm_cfg, ctx_ref, llm_state), archive = db, run = run_id,
    seed = cfg.seed, max_evals = budgets.max_evals, time_s = budgets.time_s,
    max_tokens = budgets.max_tokens, interrupted = host.interrupted, tape = tape,
    fault = make_fault(host),
    on_progress = function(c)
      local now = c:elapsed()
      if host.tty and now - last_draw < 0.1 then return end
      last_draw = now
      if host.progress_ctx then -- kevo suite draws its own bar around the run's figures
        host.progress_ctx(c, run_id)
      else
        host.progress(M.progress_line(c, run_id))
      end
    end,
    on_log = function(line)
      host.clear_progress()
      kevo.log("%s", line)
    end,
  }
  local ctx = search.new(ctx_opts)
  ctx_ref.ctx = ctx
  if rec then
    tape:on_live(function(t) -- the journal is read back: the run goes on from here
      local o = ctx_opts
      o.max_evals = cfg.max_evals or o.max_evals
      o.time_s = cfg.time_s or o.time_s
      if llm_cfg then o.max_tokens = cfg.max_tokens or o.max_tokens end
      assert(db:run_reopen(run_id))
      M.open_run = {db = dbpath, id = run_id}
      host.started(dbpath, run_id)
      r.resumed_at = t.pos
      -- a finished run (it stalled, or spent a budget) is asked to go on: a stall counts
      -- afresh; a run that was killed goes on exactly as if it had not been
      local fresh = row.status == "done" or row.status == "failed"
      t:record("resume", "{}", {max_evals = o.max_evals, time_s = o.time_s,
                                max_tokens = o.max_tokens, t = ctx:elapsed(), after = t.pos,
                                fresh_stall = fresh or nil})
      if fresh then search.fresh_stall(ctx) end
      -- attempts this run stored after its last journaled proposal (in flight at the kill)
      -- are settled again, not sent again (docs/resume.md)
      llm_state.last_id = t.llm_id
      local upto = t.llm_id
      for _, call in ipairs(db:llm_calls(run_id) or {}) do upto = math.max(upto, call.id) end
      configure_llm(o.max_tokens and math.max(0, o.max_tokens - ctx.tokens),
                    {after = t.llm_id, upto = upto})
      kevo.log("kevo run %d: resumed after journal entry %d (%d evaluations, %.1f s of run " ..
               "time replayed); going on live", run_id, r.resumed_at, ctx.evals, ctx:elapsed())
    end)
  end
  return ctx
end

-- After the strategy returned (ok) or raised (err): the journal closed, the run's status
-- recorded, the summary printed. Returns the exit code.
local function finish(r, ctx, cfg, host, ok, err)
  local db, row, rec, run_id, tape, evaluator = r.db, r.row, r.rec, r.run_id, r.tape, r.evaluator
  local strat, recipe_name, evaluator_name = r.strat, r.recipe_name, r.evaluator_name
  local resumed_at = r.resumed_at
  if evaluator.close then evaluator.close() end
  if host.tty then host.clear_progress() end
  if ok then
    local d = tape:finish()
    if d then ok, err = false, d end
  end
  if not ok and journal.is_divergence(err) then
    kevo.log("%s", tostring(err))
    kevo.log("kevo run: the strategy no longer asks what run %d's journal recorded (changed, " ..
             "or not deterministic: docs/resume.md); the run is left as it was", run_id)
    return EXIT_FAILED
  end
  local status, why = "done", nil
  -- a strategy that returned after the budget cut its last batch: the run still ended on it
  if ok and ctx._cut and search.is_global_stop(ctx._cut) then why = ctx._cut end
  if not ok then
    if search.is_stop(err) then
      why = err
      if err.reason == "interrupted" then status = "killed" end
      if err.reason == "no_gpu" then status = "failed" end
    else
      status = "failed"
      kevo.log("kevo run: the strategy failed: %s", tostring(err))
    end
  end
  if tape.mode == "live" or row.status == "running" or row.status == "killed" then
    db:run_finish(run_id, status)
  else
    status = row.status -- a finished run read back to its end: nothing to do
  end
  M.open_run = nil
  return M.summary(ctx, {run = run_id, status = status, why = why, strategy = strat.name,
                         recipe = recipe_name, cfg = cfg, host = host, db = db,
                         synthetic = evaluator_name ~= "gpu",
                         resumed = rec and (resumed_at or tape.pos) or nil})
end

function M.execute(cfg, host)
  local r = prepare(cfg, host)
  open_tape(r, cfg, host)
  local ctx = make_context(r, cfg, host)
  local run_id, rec, strat, recipe_name, seeds = r.run_id, r.rec, r.strat, r.recipe_name, r.seeds
  local evaluator_name, llm_cfg = r.evaluator_name, r.llm_cfg
  local workers = r.evaluator.workers
  kevo.log("kevo run %d: %s%s on %s, %d seed(s), evaluator: %s%s%s", run_id,
           rec and "resuming " or "", strat.name, recipe_name, #seeds, evaluator_name,
           cfg.eval and string.format(" (%d Redis worker%s, %s)", workers or 1,
                                      workers == 1 and "" or "s", cfg.eval) or
           workers and workers > 1 and string.format(" (%d workers, --gpus %s)", workers,
                                                      cfg.gpus) or "",
           llm_cfg and (", llm " .. llm_name(llm_cfg)) or "")

  local ok, err = pcall(strat.run, ctx, r.sopts)
  return finish(r, ctx, cfg, host, ok, err), run_id
end
-- Prints the summary on stdout and writes the best kernel; returns the exit code. Its lines
-- carry a strategy's words (the reason it stopped, knob values), so each is printed with its
-- terminal controls escaped.
function M.summary(ctx, s)
  local printable = require("kevo.sys").printable
  local function print(line) _G.print(printable(line)) end
  local ok, compiled, failed = 0, 0, {}
  for _, e in ipairs(ctx._entries) do
    if e.ok then ok = ok + 1 end
    if e.stage ~= "compile" then compiled = compiled + 1 end
    if not e.ok then failed[e.verdict or "error"] = (failed[e.verdict or "error"] or 0) + 1 end
  end
  local fails = {}
  for _, v in ipairs(verdict.list) do
    if failed[v] then fails[#fails + 1] = failed[v] .. " " .. v end
  end
  print(string.format("run %d %s: %s on %s: %d evaluations, %d verified%s%s, %.1f s%s", s.run,
    s.status, s.strategy, s.recipe, ctx.evals, ok,
    #fails > 0 and (" (" .. table.concat(fails, ", ") .. ")") or "",
    ctx.llm and (", " .. ctx.tokens .. " tokens") or "", ctx:elapsed(),
    s.why and (" [" .. s.why.reason .. "]") or ""))
  if s.why and s.why.message and s.why.reason ~= "no_gpu" then
    -- why it stopped, in words: a budget smaller than one call says what that call needs
    print("stopped: " .. tostring(s.why.message):gsub("^E_%u+: ", ""))
  end
  if s.resumed then
    print(string.format("resumed: %d journal entries read back, not redone", s.resumed))
  end
  if s.why and s.why.reason == "no_gpu" then
    local m = s.why.message or "no GPU"
    print(m:find("needs a GPU", 1, true) and m or ("verification needs a GPU: " .. m))
    print(string.format("compiled %d candidate(s) here; run on a GPU host to verify and time them",
                        compiled))
  end
  local b = ctx.best
  if not b then
    print("no verified kernel" .. (s.status == "killed" and " (interrupted)" or ""))
    print(string.format("see the run: kevo show %d", s.run))
    return EXIT_FAILED
  end
  local bench = b.bench or {}
  print(string.format("best: candidate %d, %.2fx the reference (%.4g ms vs %.4g ms)%s", b.id,
    b.score or 0, bench.median_ms or 0, bench.ref_median_ms or 0,
    bench.roofline_pct and string.format(", %.0f%% of roofline", bench.roofline_pct) or ""))
  if bench.eager_ms then -- a PyTorch reference (kevo import): both baselines, same session
    print(string.format("  vs PyTorch: %.2fx eager (%.4g ms)%s", bench.eager_ms / bench.median_ms,
      bench.eager_ms, bench.compiled_ms and string.format(", %.2fx torch.compile (%.4g ms)",
        bench.compiled_ms / bench.median_ms, bench.compiled_ms) or
        (", torch.compile: " .. (bench.compile_error or "not measured"))))
  end
  if b.candidate.knobs and next(b.candidate.knobs) then
    print("  knobs: " .. search.knobs_key(b.candidate.knobs))
  end
  local path, err = write_best(ctx, s.cfg, s.run, s.recipe, s.host)
  if path then
    print("  source: " .. path)
  else
    print("  (could not write the source: " .. err .. ")")
  end
  print(string.format("  see it: kevo show %d", s.run))
  if s.synthetic then
    print("note: timings come from the model evaluator (KEVO_EVALUATOR), not a GPU: synthetic")
  end
  -- a failed run (its strategy raised, was killed, or verification found no GPU) keeps what it
  -- found, and still failed: exit 1, as a suite counts it (docs/strategies.md "Exit status")
  return s.status == "failed" and EXIT_FAILED or EXIT_OK
end

-- abandon(argv = {db, run}): marks a run failed after its state broke (called by cmd_run.c).
function M.abandon(argv)
  local archive = require "kevo.archive"
  local db = archive.open(argv[1])
  if db then
    db:run_finish(math.tointeger(tonumber(argv[2])), "failed")
    db:close()
  end
  return EXIT_FAILED
end

return M
