/* kevo.evaluator: judging candidates from Lua.
 *   local evaluator = require "kevo.evaluator"
 *   local ev <close> = evaluator.new{recipe = "recipes/softmax.yaml", arch = "sm_90",
 *                                   worker = nil, deadline_s = 0 (from the problem), seed = 0
 *                                   (secret), trials = 5, bench = true, race = true, gpus = nil}
 *       gpus: nil (one worker, the driver's GPU), "all" (one per GPU), or "0,2,3" (one per listed
 *       GPU): a batch is spread over the workers (eval_pool.h)
 *       eval: "redis://[user@]host:port/db": workers on GPU hosts through Redis instead (one job
 *       in flight per worker of the arch alive now; docs/redis.md), the password in the variable
 *       eval_password_env names; nil, "E_WORKER: no kevo worker for sm_90 is alive ..." if none
 *       -> Evaluator | nil, "E_IO/E_PARSE/E_RECIPE: file:line:col: ...", code
 *       recipe may also be a table or userdata with a `path` field (a loaded recipe).
 *   ev:evaluate{lang = "cuda", source = text, launch = chunk, launch_name =, launch_line =,
 *               knobs = {BLOCK = 256}, bench = true, name = "cand.cu"} -> result table
 *       (docs/architecture.md "Evaluation result"; failures are verdicts, not errors)
 *   ev:evaluate_many({cand, ...} [, {start_by = t}]) -> {result, ...}  (compiles all at once,
 *     then judges in turn; a candidate not started by t, kevo.clock's seconds, is not evaluated:
 *     verdict not_evaluated)
 *   ev:device() -> {name, cc, sms, ...} | nil, "E_NOGPU: ...", "E_NOGPU"
 *   ev:recipe() -> {name, summary, path, params, prompt, reference = src, seeds = {src, ...}}
 *                  src = {lang, file, source, launch, launch_line, space = {KNOB = {v, ...}}}
 *   ev:stats() -> {spawns, kills, deaths, requests, workers}   (summed over the workers)
 *   evaluator.gpus([{worker=}]) -> {{index, name, cc, pci_bus, mem_bytes}, ...} | nil, msg, code
 *       (the GPUs a worker started here sees; kevo doctor)
 *   evaluator.probe_workers{gpus=, worker=} -> {{label, gpu, pid, device = {...} | error}, ...}
 *       | nil, msg, code: one worker per GPU of the list started and greeted at once, then
 *       stopped (kevo doctor)
 *   ev:close()  (also __close, __gc) */
#include "eval_client.h"
#include "eval_profile.h"
#include "eval_redis.h"
#include "evaluate.h"
#include "lutil.h"

#include "buf.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EVALUATOR_MT "kevo.evaluator.Evaluator"

typedef struct l_evaluator {
  evaluator *ev;
} l_evaluator;

static l_evaluator *check_ev(lua_State *L, int idx) {
  l_evaluator *e = luaL_checkudata(L, idx, EVALUATOR_MT);
  if (!e->ev) luaL_error(L, "evaluator is closed");
  return e;
}

static int ev_new(lua_State *L) {
  static const char *const keys[] = {
      "recipe", "arch", "worker", "deadline_s",        "seed", "trials", "bench",
      "race",   "gpus", "eval",   "eval_password_env", NULL};
  luaL_checktype(L, 1, LUA_TTABLE);
  kevo_l_checkopts(L, 1, "evaluator.new", keys);
  lua_getfield(L, 1, "recipe");
  if (!lua_isstring(L, -1)) {
    if (lua_istable(L, -1) || lua_isuserdata(L, -1)) lua_getfield(L, -1, "path");
    if (!lua_isstring(L, -1))
      return luaL_error(L, "evaluator.new: recipe must be a path or a loaded recipe (with .path)");
  }
  const char *path = lua_tostring(L, -1);
  const eval_config d = EVAL_CONFIG_DEFAULT;
  eval_config cfg = {.arch = kevo_l_optstr(L, 1, "arch", NULL),
                     .bench = kevo_l_optbool(L, 1, "bench", d.bench),
                     .race = kevo_l_optbool(L, 1, "race", d.race),
                     .seed = (uint64_t)kevo_l_optint(L, 1, "seed", (lua_Integer)d.seed),
                     .trials = (int)kevo_l_optint(L, 1, "trials", d.trials),
                     .deadline_s = kevo_l_optnum(L, 1, "deadline_s", d.deadline_s)};
  if (cfg.trials < EVAL_MIN_TRIALS)
    return luaL_error(L, "evaluator.new: trials must be at least %d", EVAL_MIN_TRIALS);
  if (cfg.deadline_s < 0)
    return luaL_error(L, "evaluator.new: deadline_s must be >= 0 (0: from the problem)");
  evalclient_opts wo = {.worker_cmd = kevo_l_optstr(L, 1, "worker", NULL)};

  l_evaluator *e = lua_newuserdatauv(L, sizeof *e, 1); /* before the resource */
  e->ev = NULL;
  luaL_setmetatable(L, EVALUATOR_MT);
  if (cfg.arch) { /* keep the arch string alive as long as the evaluator */
    lua_getfield(L, 1, "arch");
    lua_setiuservalue(L, -2, 1);
  }
  kevo_error err = {0};
  kevo_recipe *r = NULL;
  char found[4096];
  int rc = kevo_recipe_find(path, found, sizeof found, &err);
  if (!rc) rc = kevo_recipe_load(found, &r, &err);
  if (rc) return kevo_l_fail_err(L, &err);
  const char *gpus = kevo_l_optstr(L, 1, "gpus", NULL);
  const char *eval_url = kevo_l_optstr(L, 1, "eval", NULL);
  eval_pool *pool = NULL;
  if (eval_url && gpus) {
    kevo_recipe_free(r);
    return luaL_error(L, "evaluator.new: gpus and eval exclude each other (the GPUs of eval are "
                         "its workers')");
  }
  if (eval_url) { /* Redis workers on GPU hosts (docs/redis.md) */
    evalredis_opts ro = {.url = eval_url,
                         .password_env = kevo_l_optstr(L, 1, "eval_password_env", NULL),
                         .arch = cfg.arch ? cfg.arch : cuda_default_arch()};
    rc = eval_pool_redis(&ro, 0, &pool, &err);
  } else {
    /* the workers an earlier evaluator of this process left (a suite's previous problem) */
    rc = eval_pool_local_kept(gpus, &wo, &pool, &err);
  }
  if (!rc) rc = evaluator_new_pool(r, pool, &cfg, &e->ev, &err);
  if (rc) kevo_recipe_free(r); /* the evaluator owns it only once made */
  if (rc == KEVO_E_ARG && !eval_url) return luaL_error(L, "evaluator.new: %s", err.msg);
  if (rc) return kevo_l_fail_err(L, &err);
  return 1;
}

static int ev_gc(lua_State *L) {
  l_evaluator *e = luaL_checkudata(L, 1, EVALUATOR_MT);
  evaluator_free(e->ev);
  e->ev = NULL;
  return 0;
}

static int ev_tostring(lua_State *L) {
  l_evaluator *e = luaL_checkudata(L, 1, EVALUATOR_MT);
  if (!e->ev)
    lua_pushliteral(L, "kevo.evaluator.Evaluator (closed)");
  else
    lua_pushfstring(L, "kevo.evaluator.Evaluator (%s)", evaluator_recipe(e->ev)->name);
  return 1;
}

/* A candidate from the option table at idx. Strings stay reachable from that table; knobs are
 * copied into `knob_store` (a Lua table at store_idx keeps their strings alive). */
typedef struct cand_slot {
  eval_candidate c;
  kevo_define knobs[64];
  int bench; /* -1: the evaluator's setting */
} cand_slot;

static int knob_cmp(const void *a, const void *b) {
  return strcmp(((const kevo_define *)a)->name, ((const kevo_define *)b)->name);
}

static void read_candidate(lua_State *L, int idx, int store_idx, cand_slot *s, const char *fname) {
  static const char *const keys[] = {"lang",  "source", "launch", "launch_name", "launch_line",
                                     "knobs", "bench",  "name",   NULL};
  idx = lua_absindex(L, idx);
  luaL_checktype(L, idx, LUA_TTABLE);
  kevo_l_checkopts(L, idx, fname, keys);
  memset(s, 0, sizeof *s);
  s->c.lang = kevo_l_optstr(L, idx, "lang", "cuda");
  if (strcmp(s->c.lang, "cuda") && strcmp(s->c.lang, "triton"))
    luaL_error(L, "%s: lang must be \"cuda\" or \"triton\", got '%s'", fname, s->c.lang);
  lua_getfield(L, idx, "source");
  if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "%s: source (a string) is required", fname);
  s->c.source = lua_tolstring(L, -1, &s->c.len);
  lua_pop(L, 1);
  s->c.launch = kevo_l_optstr(L, idx, "launch", NULL);
  s->c.launch_name = kevo_l_optstr(L, idx, "launch_name", NULL);
  s->c.launch_line = (int)kevo_l_optint(L, idx, "launch_line", 1);
  s->c.name = kevo_l_optstr(L, idx, "name", NULL);
  s->bench = lua_getfield(L, idx, "bench") == LUA_TNIL ? -1 : lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (lua_getfield(L, idx, "knobs") != LUA_TNIL) {
    if (!lua_istable(L, -1)) luaL_error(L, "%s: knobs must be a table {NAME = value}", fname);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      if (lua_type(L, -2) != LUA_TSTRING) luaL_error(L, "%s: knob names must be strings", fname);
      if (s->c.nknobs == 64) luaL_error(L, "%s: more than 64 knobs", fname);
      int t = lua_type(L, -1);
      if (t == LUA_TBOOLEAN)
        lua_pushstring(L, lua_toboolean(L, -1) ? "1" : "0");
      else if (t == LUA_TNUMBER || t == LUA_TSTRING)
        lua_pushstring(L, lua_tostring(L, -1));
      else
        luaL_error(L, "%s: knob '%s' must be a number, string or boolean", fname,
                   lua_tostring(L, -2));
      /* stack: ... knobs key value text; keep key and text alive in the store */
      kevo_define *d = &s->knobs[s->c.nknobs++];
      d->value = lua_tostring(L, -1);
      lua_rawseti(L, store_idx, (lua_Integer)lua_rawlen(L, store_idx) + 1);
      d->name = lua_tostring(L, -2);
      lua_pushvalue(L, -2);
      lua_rawseti(L, store_idx, (lua_Integer)lua_rawlen(L, store_idx) + 1);
      lua_pop(L, 1);
    }
    qsort(s->knobs, s->c.nknobs, sizeof s->knobs[0], knob_cmp); /* same knobs, same hash */
    s->c.knobs = s->knobs;
  }
  lua_pop(L, 1);
}

/* Runs candidates in slots; pushes a list of results (or one result when single). */
static int run_slots(lua_State *L, l_evaluator *e, cand_slot *slots, size_t n, int single,
                     double start_by) {
  cJSON **results = calloc(n ? n : 1, sizeof *results);
  eval_candidate *cands = calloc(n ? n : 1, sizeof *cands);
  if (!results || !cands) {
    free(results);
    free(cands);
    return luaL_error(L, "evaluate: out of memory");
  }
  eval_config *cfg = evaluator_config(e->ev);
  int saved = cfg->bench;
  cfg->start_by = start_by;
  for (size_t i = 0; i < n; i++)
    cands[i] = slots[i].c;
  kevo_error err = {0};
  int rc;
  if (n == 1 && slots[0].bench >= 0) cfg->bench = slots[0].bench;
  if (n > 1 && slots[0].bench >= 0) cfg->bench = slots[0].bench; /* one setting per batch */
  rc = evaluator_run_many(e->ev, cands, n, results, &err);
  cfg->bench = saved;
  cfg->start_by = 0;
  if (!rc) {
    if (!single) lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
      kevo_l_pushjson(L, results[i]);
      if (!single) lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
  }
  for (size_t i = 0; i < n; i++)
    cJSON_Delete(results[i]);
  free(results);
  free(cands);
  if (rc == KEVO_E_ARG) return luaL_error(L, "evaluate: %s", err.msg);
  if (rc) return kevo_l_fail_err(L, &err);
  return 1;
}

/* ev:plans{lang=, source=, launch=, knobs=, name=} -> {{label=, plan=}, ...} | nil, msg, code:
 * the candidate's launch plans at every shape, resolved as an evaluation would (kevo export). */
static int ev_plans(lua_State *L) {
  l_evaluator *e = check_ev(L, 1);
  lua_newtable(L); /* stack: ev opts store */
  int store = lua_gettop(L);
  cand_slot *slot = lua_newuserdatauv(L, sizeof *slot, 0);
  read_candidate(L, 2, store, slot, "plans");
  cJSON *out = NULL;
  kevo_error err = {0};
  if (evaluator_plans(e->ev, &slot->c, &out, &err)) return kevo_l_fail_err(L, &err);
  kevo_l_pushjson(L, out);
  cJSON_Delete(out);
  return 1;
}

static int ev_evaluate(lua_State *L) {
  l_evaluator *e = check_ev(L, 1);
  lua_newtable(L); /* stack: ev opts store */
  int store = lua_gettop(L);
  cand_slot *slot = lua_newuserdatauv(L, sizeof *slot, 0);
  read_candidate(L, 2, store, slot, "evaluate");
  return run_slots(L, e, slot, 1, 1, 0);
}

static int ev_evaluate_many(lua_State *L) {
  l_evaluator *e = check_ev(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  double start_by = 0;
  if (lua_type(L, 3) == LUA_TTABLE) {
    static const char *const keys[] = {"start_by", NULL};
    kevo_l_checkopts(L, 3, "evaluate_many", keys);
    lua_getfield(L, 3, "start_by");
    start_by = lua_isnil(L, -1) ? 0 : luaL_checknumber(L, -1);
    lua_pop(L, 1);
  } else if (!lua_isnoneornil(L, 3)) {
    return luaL_error(L, "evaluate_many: options must be a table");
  }
  lua_settop(L, 2);
  size_t n = lua_rawlen(L, 2);
  if (n > 4096) return luaL_error(L, "evaluate_many: more than 4096 candidates");
  lua_newtable(L);
  int store = lua_gettop(L);
  cand_slot *slots = lua_newuserdatauv(L, sizeof *slots * (n ? n : 1), 0);
  int bench = -2;
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, 2, (lua_Integer)i + 1);
    read_candidate(L, -1, store, &slots[i], "evaluate_many");
    lua_pop(L, 1);
    if (bench != -2 && slots[i].bench != bench)
      return luaL_error(L, "evaluate_many: every candidate must ask for the same bench setting");
    bench = slots[i].bench;
  }
  return run_slots(L, e, slots, n, 0, start_by);
}

/* ev:profile({cand, ...} [, {reference = true, deadline_ms = n, bounds = {"memory", ...}}])
 * -> {profile, ...}: each candidate's hardware metrics at the benchmark shape (docs/profile.md),
 * one ncu run for the batch. A profile that could not be taken is {ok = false, reason, error}:
 * never an error return for the profiler's or the candidate's sake. */
static int ev_profile(lua_State *L) {
  static const char *const keys[] = {"reference", "deadline_ms", "bounds", NULL};
  l_evaluator *e = check_ev(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  int with_ref = 1;
  double deadline_ms = 0;
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    kevo_l_checkopts(L, 3, "profile", keys);
    if (lua_getfield(L, 3, "reference") != LUA_TNIL) with_ref = lua_toboolean(L, -1);
    lua_pop(L, 1);
    deadline_ms = (double)kevo_l_optint(L, 3, "deadline_ms", 0);
    if (deadline_ms < 0 || deadline_ms > 600000)
      return luaL_error(L, "profile: deadline_ms must be 0 to 600000");
  }
  size_t n = lua_rawlen(L, 2);
  if (n > 256) return luaL_error(L, "profile: more than 256 candidates");
  lua_newtable(L);
  int store = lua_gettop(L);
  cand_slot *slots = lua_newuserdatauv(L, sizeof *slots * (n ? n : 1), 0);
  const char **bounds = lua_newuserdatauv(L, sizeof *bounds * (n ? n : 1), 0);
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, 2, (lua_Integer)i + 1);
    read_candidate(L, -1, store, &slots[i], "profile");
    lua_pop(L, 1);
    bounds[i] = NULL;
    if (!lua_isnoneornil(L, 3) && lua_getfield(L, 3, "bounds") == LUA_TTABLE) {
      lua_rawgeti(L, -1, (lua_Integer)i + 1);
      bounds[i] = lua_tostring(L, -1); /* kept alive by opts.bounds */
      lua_pop(L, 1);
    }
    if (!lua_isnoneornil(L, 3)) lua_pop(L, 1);
  }
  cJSON **profiles = calloc(n ? n : 1, sizeof *profiles);
  eval_candidate *cands = calloc(n ? n : 1, sizeof *cands);
  if (!profiles || !cands) {
    free(profiles);
    free(cands);
    return luaL_error(L, "profile: out of memory");
  }
  for (size_t i = 0; i < n; i++)
    cands[i] = slots[i].c;
  kevo_error err = {0};
  int rc = evaluator_profile_many(e->ev, cands, n, with_ref, deadline_ms, bounds, profiles, &err);
  if (!rc) {
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
      kevo_l_pushjson(L, profiles[i]);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
  }
  for (size_t i = 0; i < n; i++)
    cJSON_Delete(profiles[i]);
  free(profiles);
  free(cands);
  if (rc == KEVO_E_ARG) return luaL_error(L, "profile: %s", err.msg);
  if (rc) return kevo_l_fail_err(L, &err);
  return 1;
}

/* evaluator.read_profile(reply_json, label [, bound]) -> profile: the "profile" object
 * (docs/profile.md) of plan `label` in a worker's profile reply (JSON text), the reference's
 * plan beside it; what ev:profile gives, from a reply recorded earlier (tests, bench). */
static int ev_read_profile(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  const char *label = luaL_checkstring(L, 2);
  const char *bound = luaL_optstring(L, 3, NULL);
  cJSON *reply = cJSON_ParseWithLength(text, len);
  if (!reply) return luaL_error(L, "read_profile: the reply is not JSON");
  cJSON *p = eval_profile_object(reply, eval_profile_plan(reply, label),
                                 eval_profile_plan(reply, "reference"), bound);
  kevo_l_pushjson(L, p);
  cJSON_Delete(p);
  cJSON_Delete(reply);
  return 1;
}

static int ev_device(lua_State *L) {
  l_evaluator *e = check_ev(L, 1);
  const cJSON *dev;
  kevo_error err = {0};
  if (evaluator_device(e->ev, &dev, &err)) return kevo_l_fail_err(L, &err);
  kevo_l_pushjson(L, dev);
  return 1;
}

static int ev_stats(lua_State *L) {
  l_evaluator *e = check_ev(L, 1);
  evalclient_stats s = evaluator_worker_stats(e->ev);
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, s.spawns);
  lua_setfield(L, -2, "spawns");
  lua_pushinteger(L, s.kills);
  lua_setfield(L, -2, "kills");
  lua_pushinteger(L, s.deaths);
  lua_setfield(L, -2, "deaths");
  lua_pushinteger(L, s.requests);
  lua_setfield(L, -2, "requests");
  lua_pushinteger(L, (lua_Integer)evaluator_workers(e->ev));
  lua_setfield(L, -2, "workers");
  return 1;
}

static void push_source(lua_State *L, const kevo_recipe *r, const kevo_source *s) {
  lua_createtable(L, 0, 6);
  lua_pushstring(L, s->lang);
  lua_setfield(L, -2, "lang");
  lua_pushstring(L, s->file);
  lua_setfield(L, -2, "file");
  if (s->launch) {
    lua_pushstring(L, s->launch);
    lua_setfield(L, -2, "launch");
    lua_pushinteger(L, s->launch_line);
    lua_setfield(L, -2, "launch_line");
    lua_pushstring(L, r->path);
    lua_setfield(L, -2, "launch_name");
  }
  kevo_buf b;
  kevo_buf_init(&b, KEVO_TEXT_FILE_CAP);
  kevo_error err;
  int rc = kevo_read_file(s->file, &b, &err);
  if (rc && s->file[0] != '/' && r->dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", r->dir, s->file);
    kevo_buf_reset(&b);
    rc = kevo_read_file(path, &b, &err);
  }
  if (!rc) {
    lua_pushlstring(L, b.data, b.len);
    lua_setfield(L, -2, "source");
  }
  kevo_buf_free(&b);
  lua_createtable(L, 0, (int)s->nknobs);
  for (size_t k = 0; k < s->nknobs; k++) {
    lua_createtable(L, (int)s->knobs[k].nvalues, 0);
    for (size_t v = 0; v < s->knobs[k].nvalues; v++) {
      lua_pushstring(L, s->knobs[k].values[v]);
      lua_rawseti(L, -2, (lua_Integer)v + 1);
    }
    lua_setfield(L, -2, s->knobs[k].name);
  }
  lua_setfield(L, -2, "space");
}

static int ev_recipe(lua_State *L) {
  l_evaluator *e = check_ev(L, 1);
  const kevo_recipe *r = evaluator_recipe(e->ev);
  lua_createtable(L, 0, 8);
  lua_pushstring(L, r->name);
  lua_setfield(L, -2, "name");
  lua_pushstring(L, r->path);
  lua_setfield(L, -2, "path");
  if (r->summary) {
    lua_pushstring(L, r->summary);
    lua_setfield(L, -2, "summary");
  }
  if (r->prompt) {
    lua_pushstring(L, r->prompt);
    lua_setfield(L, -2, "prompt");
  }
  lua_createtable(L, 0, (int)r->nparams);
  for (size_t i = 0; i < r->nparams; i++) {
    lua_pushinteger(L, (lua_Integer)r->params[i].value);
    lua_setfield(L, -2, r->params[i].name);
  }
  lua_setfield(L, -2, "params");
  push_source(L, r, &r->reference);
  lua_setfield(L, -2, "reference");
  lua_createtable(L, (int)r->nseeds, 0);
  for (size_t i = 0; i < r->nseeds; i++) {
    push_source(L, r, &r->seeds[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "seeds");
  return 1;
}

/* evaluator.probe([{worker=}]) -> device table | nil, msg, code: starts a worker, asks its
 * device (hello, which also measures copy bandwidth) and stops it. For `kevo doctor`. */
static int ev_probe(lua_State *L) {
  static const char *const keys[] = {"worker", NULL};
  kevo_l_checkopts(L, 1, "evaluator.probe", keys);
  evalclient_opts o = {.worker_cmd = kevo_l_optstr(L, 1, "worker", NULL)};
  evalclient *c = NULL;
  kevo_error err = {0};
  const cJSON *dev = NULL;
  int rc = evalclient_new(&o, &c, &err);
  if (!rc) rc = evalclient_device(c, &dev, &err);
  if (rc) {
    evalclient_free(c);
    return kevo_l_fail_err(L, &err);
  }
  kevo_l_pushjson(L, dev);
  evalclient_free(c);
  return 1;
}

/* evaluator.gpus([{worker=}]) -> list | nil, msg, code (eval_pool_list_gpus). */
static int ev_gpus(lua_State *L) {
  static const char *const keys[] = {"worker", NULL};
  kevo_l_checkopts(L, 1, "evaluator.gpus", keys);
  evalclient_opts o = {.worker_cmd = kevo_l_optstr(L, 1, "worker", NULL)};
  cJSON *list = NULL;
  kevo_error err = {0};
  if (eval_pool_list_gpus(&o, &list, &err)) return kevo_l_fail_err(L, &err);
  kevo_l_pushjson(L, list);
  cJSON_Delete(list);
  return 1;
}

typedef struct probe_job {
  eval_pool *pool;
  const cJSON *dev[1024];
  int rc[1024];
  kevo_error err[1024];
} probe_job;

static void probe_one(void *arg, size_t i) {
  probe_job *j = arg;
  eval_transport *t = eval_pool_at(j->pool, i);
  j->rc[i] = t->ops->device(t->self, &j->dev[i], &j->err[i]);
}

static int ev_probe_workers(lua_State *L) {
  static const char *const keys[] = {"worker", "gpus", NULL};
  luaL_checktype(L, 1, LUA_TTABLE);
  kevo_l_checkopts(L, 1, "evaluator.probe_workers", keys);
  evalclient_opts o = {.worker_cmd = kevo_l_optstr(L, 1, "worker", NULL)};
  const char *gpus = kevo_l_optstr(L, 1, "gpus", "all");
  probe_job *j = calloc(1, sizeof *j);
  if (!j) return luaL_error(L, "evaluator.probe_workers: out of memory");
  kevo_error err = {0};
  if (eval_pool_local(gpus, &o, &j->pool, &err)) {
    free(j);
    return kevo_l_fail_err(L, &err);
  }
  size_t n = eval_pool_size(j->pool);
  eval_pool_each(j->pool, n, probe_one, j);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    eval_transport *t = eval_pool_at(j->pool, i);
    lua_createtable(L, 0, 4);
    lua_pushstring(L, t->label);
    lua_setfield(L, -2, "label");
    lua_pushstring(L, t->gpu);
    lua_setfield(L, -2, "gpu");
    if (j->rc[i]) {
      lua_pushstring(L, j->err[i].msg);
      lua_setfield(L, -2, "error");
    } else {
      kevo_l_pushjson(L, j->dev[i]);
      lua_setfield(L, -2, "device");
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  eval_pool_free(j->pool);
  free(j);
  return 1;
}

int luaopen_kevo_evaluator(lua_State *L);
int luaopen_kevo_evaluator(lua_State *L) {
  static const luaL_Reg methods[] = {{"evaluate", ev_evaluate},
                                     {"evaluate_many", ev_evaluate_many},
                                     {"profile", ev_profile},
                                     {"plans", ev_plans},
                                     {"device", ev_device},
                                     {"recipe", ev_recipe},
                                     {"stats", ev_stats},
                                     {"close", ev_gc},
                                     {NULL, NULL}};
  kevo_l_newclass(L, EVALUATOR_MT, methods, ev_gc, ev_tostring);
  static const luaL_Reg fns[] = {{"new", ev_new},
                                 {"probe", ev_probe},
                                 {"read_profile", ev_read_profile},
                                 {"gpus", ev_gpus},
                                 {"probe_workers", ev_probe_workers},
                                 {NULL, NULL}};
  luaL_newlib(L, fns);
  return 1;
}
