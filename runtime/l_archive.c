/* kevo.archive: the SQLite archive (runtime/archive.h) for Lua; docs/archive.md has the API.
 *   archive.open([path [, {readonly=, busy_ms=, sync="normal"|"full", check=}]])
 *     -> db | nil, msg, "E_DB"          (path: $KEVO_DB or ./kevo.db when nil)
 * Methods of kevo.archive.DB write rows (run_create, run_finish, run_reopen, candidate_add,
 * eval_add, llm_call_add, journal_append; begin/commit/rollback group writes into one
 * transaction) and read them back (runs, run, candidates, evaluations, best,
 * top, verdicts, llm_call_lookup, journal_get, journal, journal_count). Rows are tables keyed by
 * column name (NULL columns absent, `ok` a boolean). An unknown id, a bad status or option raises
 * (misuse); a failing archive returns nil, msg, "E_DB". JSON columns accept text or a table,
 * which is encoded with kevo.json. */
#include "archive.h"
#include "lutil.h"

#include <math.h>
#include <string.h>

#define DB_MT "kevo.archive.DB"

int luaopen_kevo_archive(lua_State *L);
int luaopen_kevo_json(lua_State *L);

typedef struct ldb {
  kevo_archive *a;
} ldb;

static kevo_archive *check_db(lua_State *L) {
  ldb *d = luaL_checkudata(L, 1, DB_MT);
  if (!d->a) luaL_error(L, "kevo.archive.DB: the archive is closed");
  return d->a;
}

/* Misuse (KEVO_E_ARG) raises; any other failure is the expected nil, msg, code. */
static int fail(lua_State *L, const kevo_error *err) {
  if (err->status == KEVO_E_ARG) return luaL_error(L, "%s", err->msg);
  return kevo_l_fail_err(L, err);
}

/* A JSON option: text as given, a table encoded with kevo.json in its canonical form (keys
 * sorted, so the same value is the same text in every process: runs.config and
 * candidates.knobs are compared as text), nil -> NULL. The text is left on the stack so it
 * lives as long as the call. */
static const char *opt_json(lua_State *L, int idx, const char *key) {
  int t = lua_getfield(L, idx, key);
  if (t == LUA_TNIL) {
    lua_pop(L, 1);
    return NULL;
  }
  if (t == LUA_TSTRING) return lua_tostring(L, -1);
  if (t != LUA_TTABLE)
    luaL_error(L, "option '%s' must be JSON text or a table, got %s", key, luaL_typename(L, -1));
  luaL_requiref(L, "kevo.json", luaopen_kevo_json, 0);
  lua_getfield(L, -1, "encode"); /* stack: value json encode */
  lua_pushvalue(L, -3);
  lua_createtable(L, 0, 1);
  lua_pushboolean(L, 1);
  lua_setfield(L, -2, "canonical"); /* stack: value json encode value {canonical=true} */
  lua_call(L, 2, 1);                /* stack: value json text */
  lua_replace(L, -3);
  lua_pop(L, 1);
  return lua_tostring(L, -1);
}

/* A required string option (misuse raises when absent). */
static const char *need_str(lua_State *L, int idx, const char *fname, const char *key,
                            size_t *len) {
  if (lua_getfield(L, idx, key) != LUA_TSTRING)
    luaL_error(L, "%s: option '%s' must be a string, got %s", fname, key, luaL_typename(L, -1));
  const char *s = lua_tolstring(L, -1, len);
  lua_pop(L, 1); /* still referenced by the option table */
  return s;
}

static lua_Integer need_int(lua_State *L, int idx, const char *fname, const char *key) {
  lua_getfield(L, idx, key);
  int isint;
  lua_Integer v = lua_tointegerx(L, -1, &isint);
  if (!isint)
    luaL_error(L, "%s: option '%s' must be an integer, got %s", fname, key, luaL_typename(L, -1));
  lua_pop(L, 1);
  return v;
}

static void push_row(lua_State *L, const kevo_row *r) {
  int n = kevo_row_count(r);
  lua_createtable(L, 0, n);
  for (int i = 0; i < n; i++) {
    const char *name = kevo_row_name(r, i);
    size_t len;
    switch (kevo_row_type(r, i)) {
    case KEVO_COL_NULL:
      continue;
    case KEVO_COL_INT:
      if (strcmp(name, "ok") == 0)
        lua_pushboolean(L, kevo_row_int_at(r, i) != 0);
      else
        lua_pushinteger(L, (lua_Integer)kevo_row_int_at(r, i));
      break;
    case KEVO_COL_REAL:
      lua_pushnumber(L, kevo_row_real_at(r, i));
      break;
    default: {
      const char *text = kevo_row_text_at(r, i, &len);
      lua_pushlstring(L, text, len);
      break;
    }
    }
    lua_setfield(L, -2, name);
  }
}

struct rows_ud {
  lua_State *L;
  lua_Integer n;
};

/* Row callback: appends the row to the array on top of the stack. */
static int append_row(void *ud, const kevo_row *r) {
  struct rows_ud *u = ud;
  push_row(u->L, r);
  lua_rawseti(u->L, -2, ++u->n);
  return 0;
}

/* Row callback: leaves the row as a table on the stack. */
static int one_row(void *ud, const kevo_row *r) {
  push_row(ud, r);
  return 1;
}

/* --- open and the handle -------------------------------------------------------------------- */

static int archive_open(lua_State *L) {
  const char *path = luaL_optstring(L, 1, NULL);
  kevo_l_checkopts(L, 2, "archive.open",
                   (const char *const[]){"readonly", "busy_ms", "sync", "check", NULL});
  kevo_archive_opts o = {0};
  o.readonly = kevo_l_optbool(L, 2, "readonly", 0);
  o.busy_ms = (int)kevo_l_optint(L, 2, "busy_ms", 0);
  o.no_check = !kevo_l_optbool(L, 2, "check", 1);
  const char *sync = kevo_l_optstr(L, 2, "sync", "normal");
  if (strcmp(sync, "normal") && strcmp(sync, "full"))
    return luaL_error(L, "archive.open: option 'sync' must be \"normal\" or \"full\"");
  o.sync_full = strcmp(sync, "full") == 0;
  if (!path) path = kevo_archive_default_path();
  ldb *d = lua_newuserdatauv(L, sizeof *d, 0); /* before the resource, so it cannot leak */
  d->a = NULL;
  luaL_setmetatable(L, DB_MT);
  kevo_error err = {0};
  if (kevo_archive_open(path, &o, &d->a, &err)) return fail(L, &err);
  return 1;
}

static int db_close(lua_State *L) {
  ldb *d = luaL_checkudata(L, 1, DB_MT);
  kevo_archive_close(d->a);
  d->a = NULL;
  return 0;
}

static int db_tostring(lua_State *L) {
  ldb *d = luaL_checkudata(L, 1, DB_MT);
  if (d->a)
    lua_pushfstring(L, "kevo.archive.DB (%s)", kevo_archive_path(d->a));
  else
    lua_pushliteral(L, "kevo.archive.DB (closed)");
  return 1;
}

static int db_path(lua_State *L) {
  lua_pushstring(L, kevo_archive_path(check_db(L)));
  return 1;
}

/* --- writes --------------------------------------------------------------------------------- */

static int push_id(lua_State *L, int rc, int64_t id, const kevo_error *err) {
  if (rc) return fail(L, err);
  lua_pushinteger(L, (lua_Integer)id);
  return 1;
}

static int db_run_create(lua_State *L) {
  kevo_archive *a = check_db(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  kevo_l_checkopts(L, 2, "db:run_create",
                   (const char *const[]){"recipe", "recipe_path", "recipe_hash", "strategy",
                                         "config", "seed", NULL});
  kevo_run_spec s = {0};
  s.recipe = kevo_l_optstr(L, 2, "recipe", NULL);
  s.recipe_path = kevo_l_optstr(L, 2, "recipe_path", NULL);
  s.recipe_hash = kevo_l_optstr(L, 2, "recipe_hash", NULL);
  s.strategy = kevo_l_optstr(L, 2, "strategy", NULL);
  s.config = opt_json(L, 2, "config");
  lua_getfield(L, 2, "seed");
  s.has_seed = !lua_isnil(L, -1);
  lua_pop(L, 1);
  s.seed = kevo_l_optint(L, 2, "seed", 0);
  kevo_error err = {0};
  int64_t id = 0;
  int rc = kevo_archive_run_create(a, &s, &id, &err);
  return push_id(L, rc, id, &err);
}

static int db_run_finish(lua_State *L) {
  kevo_archive *a = check_db(L);
  lua_Integer run = luaL_checkinteger(L, 2);
  const char *status = luaL_checkstring(L, 3);
  kevo_error err = {0};
  if (kevo_archive_run_finish(a, run, status, &err)) return fail(L, &err);
  lua_pushboolean(L, 1);
  return 1;
}

/* db:run_reopen(run) -> true: the run is "running" again (kevo run --resume). */
static int db_run_reopen(lua_State *L) {
  kevo_archive *a = check_db(L);
  lua_Integer run = luaL_checkinteger(L, 2);
  kevo_error err = {0};
  if (kevo_archive_run_reopen(a, run, &err)) return fail(L, &err);
  lua_pushboolean(L, 1);
  return 1;
}

/* db:begin() / db:commit() -> true | nil, msg, code; db:rollback(): one transaction around
 * several writes (archive.h). */
static int db_begin(lua_State *L) {
  kevo_archive *a = check_db(L);
  kevo_error err = {0};
  if (kevo_archive_begin(a, &err)) return fail(L, &err);
  lua_pushboolean(L, 1);
  return 1;
}

static int db_commit(lua_State *L) {
  kevo_archive *a = check_db(L);
  kevo_error err = {0};
  if (kevo_archive_commit(a, &err)) return fail(L, &err);
  lua_pushboolean(L, 1);
  return 1;
}

static int db_rollback(lua_State *L) {
  kevo_archive_rollback(check_db(L));
  return 0;
}

static int db_candidate_add(lua_State *L) {
  kevo_archive *a = check_db(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  kevo_l_checkopts(
      L, 2, "db:candidate_add",
      (const char *const[]){"run", "parent", "origin", "lang", "source", "launch", "knobs", NULL});
  kevo_candidate_spec s = {0};
  s.run = need_int(L, 2, "db:candidate_add", "run");
  s.parent = kevo_l_optint(L, 2, "parent", 0);
  s.origin = need_str(L, 2, "db:candidate_add", "origin", NULL);
  s.lang = need_str(L, 2, "db:candidate_add", "lang", NULL);
  s.source = need_str(L, 2, "db:candidate_add", "source", &s.source_len);
  s.launch = kevo_l_optstr(L, 2, "launch", NULL);
  s.knobs = opt_json(L, 2, "knobs");
  kevo_error err = {0};
  int64_t id = 0;
  int rc = kevo_archive_candidate_add(a, &s, &id, &err);
  return push_id(L, rc, id, &err);
}

static int db_eval_add(lua_State *L) {
  kevo_archive *a = check_db(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  kevo_l_checkopts(L, 2, "db:eval_add",
                   (const char *const[]){"candidate", "stage", "verdict", "ok", "speedup",
                                         "median_ms", "result", "fingerprint", NULL});
  kevo_eval_spec s = {0};
  s.candidate = need_int(L, 2, "db:eval_add", "candidate");
  s.stage = need_str(L, 2, "db:eval_add", "stage", NULL);
  s.verdict = need_str(L, 2, "db:eval_add", "verdict", NULL);
  if (lua_getfield(L, 2, "ok") != LUA_TBOOLEAN)
    return luaL_error(L, "db:eval_add: option 'ok' must be a boolean, got %s",
                      luaL_typename(L, -1));
  s.ok = lua_toboolean(L, -1);
  lua_pop(L, 1);
  s.speedup = kevo_l_optnum(L, 2, "speedup", NAN);
  s.median_ms = kevo_l_optnum(L, 2, "median_ms", NAN);
  s.result = opt_json(L, 2, "result");
  s.fingerprint = opt_json(L, 2, "fingerprint");
  kevo_error err = {0};
  int64_t id = 0;
  int rc = kevo_archive_eval_add(a, &s, &id, &err);
  return push_id(L, rc, id, &err);
}

static int db_llm_call_add(lua_State *L) {
  kevo_archive *a = check_db(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  kevo_l_checkopts(L, 2, "db:llm_call_add",
                   (const char *const[]){"run", "provider", "model", "request", "response",
                                         "http_status", "input_tokens", "output_tokens", "cost",
                                         "ms", "error", NULL});
  kevo_llm_call_spec s = {0};
  s.run = kevo_l_optint(L, 2, "run", 0);
  s.provider = kevo_l_optstr(L, 2, "provider", NULL);
  s.model = kevo_l_optstr(L, 2, "model", NULL);
  s.request = need_str(L, 2, "db:llm_call_add", "request", &s.request_len);
  if (lua_getfield(L, 2, "response") == LUA_TSTRING)
    s.response = lua_tolstring(L, -1, &s.response_len);
  else if (!lua_isnil(L, -1))
    return luaL_error(L, "db:llm_call_add: option 'response' must be a string (the raw body)");
  lua_pop(L, 1);
  s.http_status = (int)kevo_l_optint(L, 2, "http_status", 0);
  s.input_tokens = kevo_l_optint(L, 2, "input_tokens", 0);
  s.output_tokens = kevo_l_optint(L, 2, "output_tokens", 0);
  s.cost = kevo_l_optnum(L, 2, "cost", NAN);
  s.ms = kevo_l_optnum(L, 2, "ms", NAN);
  s.error = kevo_l_optstr(L, 2, "error", NULL);
  kevo_error err = {0};
  int64_t id = 0;
  int rc = kevo_archive_llm_call_add(a, &s, &id, &err);
  return push_id(L, rc, id, &err);
}

/* db:journal_append(run, kind, request [, response]) -> seq */
static int db_journal_append(lua_State *L) {
  kevo_archive *a = check_db(L);
  lua_Integer run = luaL_checkinteger(L, 2);
  const char *kind = luaL_checkstring(L, 3);
  size_t reqlen, resplen = 0;
  const char *req = luaL_checklstring(L, 4, &reqlen);
  const char *resp = luaL_optlstring(L, 5, NULL, &resplen);
  kevo_error err = {0};
  int64_t seq = 0;
  int rc = kevo_archive_journal_append(a, run, kind, req, reqlen, resp, resplen, &seq, &err);
  return push_id(L, rc, seq, &err);
}

/* --- reads ---------------------------------------------------------------------------------- */

/* The result of a read that fills an array (already on the stack). */
static int rows_result(lua_State *L, int rc, const kevo_error *err) {
  return rc ? fail(L, err) : 1;
}

static int db_runs(lua_State *L) {
  kevo_archive *a = check_db(L);
  lua_newtable(L);
  struct rows_ud u = {L, 0};
  kevo_error err = {0};
  return rows_result(L, kevo_archive_runs(a, append_row, &u, &err), &err);
}

static int db_candidates(lua_State *L) {
  kevo_archive *a = check_db(L);
  lua_Integer run = luaL_checkinteger(L, 2);
  lua_newtable(L);
  struct rows_ud u = {L, 0};
  kevo_error err = {0};
  return rows_result(L, kevo_archive_candidates(a, run, append_row, &u, &err), &err);
}

/* db:llm_calls(run): the run's LLM calls (usage columns, no bodies), id order */
static int db_llm_calls(lua_State *L) {
  kevo_archive *a = check_db(L);
  lua_Integer run = luaL_checkinteger(L, 2);
  lua_newtable(L);
  struct rows_ud u = {L, 0};
  kevo_error err = {0};
  return rows_result(L, kevo_archive_llm_calls(a, run, append_row, &u, &err), &err);
}

/* db:evaluations(candidate) or db:evaluations{candidate=} or db:evaluations{run=} */
static int db_evaluations(lua_State *L) {
  kevo_archive *a = check_db(L);
  lua_Integer candidate = 0, run = 0;
  if (lua_istable(L, 2)) {
    kevo_l_checkopts(L, 2, "db:evaluations", (const char *const[]){"candidate", "run", NULL});
    candidate = kevo_l_optint(L, 2, "candidate", 0);
    run = kevo_l_optint(L, 2, "run", 0);
    if ((candidate > 0) == (run > 0))
      return luaL_error(L, "db:evaluations: give exactly one of candidate= and run=");
  } else {
    candidate = luaL_checkinteger(L, 2);
  }
  lua_newtable(L);
  struct rows_ud u = {L, 0};
  kevo_error err = {0};
  return rows_result(L, kevo_archive_evaluations(a, candidate, run, append_row, &u, &err), &err);
}

static int db_top(lua_State *L) {
  kevo_archive *a = check_db(L);
  lua_Integer run = luaL_checkinteger(L, 2);
  lua_Integer limit = luaL_optinteger(L, 3, 10);
  lua_newtable(L);
  struct rows_ud u = {L, 0};
  kevo_error err = {0};
  return rows_result(L, kevo_archive_top(a, run, (int)limit, append_row, &u, &err), &err);
}

static int count_verdict(void *ud, const kevo_row *r) {
  lua_State *L = ud;
  lua_pushinteger(L, (lua_Integer)kevo_row_int(r, "n", 0));
  lua_setfield(L, -2, kevo_row_text(r, "verdict", NULL));
  return 0;
}

/* db:verdicts(run) -> {ok = n, wrong = n, ...} */
static int db_verdicts(lua_State *L) {
  kevo_archive *a = check_db(L);
  lua_Integer run = luaL_checkinteger(L, 2);
  lua_newtable(L);
  kevo_error err = {0};
  return rows_result(L, kevo_archive_verdicts(a, run, count_verdict, L, &err), &err);
}

/* The result of a single-row read: the row table (left by one_row), or nil when none. */
static int row_result(lua_State *L, int rc, int found, const kevo_error *err) {
  if (rc) return fail(L, err);
  if (!found) lua_pushnil(L);
  return 1;
}

static int db_run(lua_State *L) {
  kevo_archive *a = check_db(L);
  lua_Integer run = luaL_checkinteger(L, 2);
  kevo_error err = {0};
  int found = 0;
  int rc = kevo_archive_run(a, run, one_row, L, &found, &err);
  return row_result(L, rc, found, &err);
}

static int db_best(lua_State *L) {
  kevo_archive *a = check_db(L);
  lua_Integer run = luaL_checkinteger(L, 2);
  kevo_error err = {0};
  int found = 0;
  int rc = kevo_archive_best(a, run, one_row, L, &found, &err);
  return row_result(L, rc, found, &err);
}

/* db:llm_call_lookup(request [, {run=, after=, upto=}]) -> response, row | nil: the most
 * recent successful call with that request; with the range, the oldest of run's calls with
 * after < id <= upto, whatever its outcome (response nil when none was stored). */
static int db_llm_call_lookup(lua_State *L) {
  kevo_archive *a = check_db(L);
  size_t len;
  const char *req = luaL_checklstring(L, 2, &len);
  kevo_error err = {0};
  int found = 0, rc;
  if (lua_isnoneornil(L, 3)) {
    rc = kevo_archive_llm_call_lookup(a, req, len, one_row, L, &found, &err);
  } else {
    kevo_l_checkopts(L, 3, "db:llm_call_lookup",
                     (const char *const[]){"run", "after", "upto", NULL});
    lua_Integer run = need_int(L, 3, "db:llm_call_lookup", "run");
    lua_Integer after = kevo_l_optint(L, 3, "after", 0);
    lua_Integer upto = kevo_l_optint(L, 3, "upto", LUA_MAXINTEGER);
    lua_settop(L, 3);
    rc = kevo_archive_llm_call_next(a, req, len, run, after, upto, one_row, L, &found, &err);
  }
  if (rc) return fail(L, &err);
  if (!found) {
    lua_pushnil(L);
    return 1;
  }
  lua_getfield(L, -1, "response"); /* stack: row response */
  lua_insert(L, -2);
  return 2;
}

/* Pushes entry seq of run's journal as kind, request, response (response nil when NULL), or
 * nothing; returns the number of values pushed, or raises/fails through fail(). */
static int push_entry(lua_State *L, kevo_archive *a, lua_Integer run, lua_Integer seq, int *nret) {
  kevo_error err = {0};
  int found = 0;
  int rc = kevo_archive_journal_get(a, run, seq, one_row, L, &found, &err);
  if (rc) {
    *nret = fail(L, &err);
    return -1;
  }
  if (!found) return 0;
  int row = lua_gettop(L);
  lua_getfield(L, row, "kind");
  lua_getfield(L, row, "request");
  lua_getfield(L, row, "response");
  lua_remove(L, row);
  return 3;
}

/* db:journal_get(run, seq) -> kind, request, response | nil */
static int db_journal_get(lua_State *L) {
  kevo_archive *a = check_db(L);
  lua_Integer run = luaL_checkinteger(L, 2), seq = luaL_checkinteger(L, 3);
  int nret = 0, n = push_entry(L, a, run, seq, &nret);
  if (n < 0) return nret;
  if (n == 0) lua_pushnil(L);
  return n ? n : 1;
}

/* The generic-for iterator of db:journal(run): (db, seq) -> seq + 1, kind, request, response.
 * Each step reads one entry by its key, so appends made during the loop are seen. */
static int journal_next(lua_State *L) {
  kevo_archive *a = check_db(L);
  lua_Integer run = lua_tointeger(L, lua_upvalueindex(1));
  lua_Integer seq = luaL_checkinteger(L, 2) + 1;
  lua_pushinteger(L, seq);
  int nret = 0, n = push_entry(L, a, run, seq, &nret);
  if (n < 0) return luaL_error(L, "db:journal: %s", lua_tostring(L, -2));
  if (n == 0) {
    lua_pushnil(L);
    return 1;
  }
  return 4;
}

/* db:journal(run [, after]) -> iterator over entries after seq `after` (default 0) */
static int db_journal(lua_State *L) {
  check_db(L);
  lua_Integer run = luaL_checkinteger(L, 2);
  lua_Integer after = luaL_optinteger(L, 3, 0);
  lua_pushinteger(L, run);
  lua_pushcclosure(L, journal_next, 1);
  lua_pushvalue(L, 1);
  lua_pushinteger(L, after);
  return 3;
}

static int db_journal_count(lua_State *L) {
  kevo_archive *a = check_db(L);
  lua_Integer run = luaL_checkinteger(L, 2);
  kevo_error err = {0};
  int64_t n = 0;
  int rc = kevo_archive_journal_count(a, run, &n, &err);
  return push_id(L, rc, n, &err);
}

static int archive_default_path(lua_State *L) {
  lua_pushstring(L, kevo_archive_default_path());
  return 1;
}

int luaopen_kevo_archive(lua_State *L) {
  static const luaL_Reg methods[] = {{"run_create", db_run_create},
                                     {"run_finish", db_run_finish},
                                     {"run_reopen", db_run_reopen},
                                     {"begin", db_begin},
                                     {"commit", db_commit},
                                     {"rollback", db_rollback},
                                     {"candidate_add", db_candidate_add},
                                     {"eval_add", db_eval_add},
                                     {"llm_call_add", db_llm_call_add},
                                     {"llm_call_lookup", db_llm_call_lookup},
                                     {"llm_calls", db_llm_calls},
                                     {"journal_append", db_journal_append},
                                     {"journal_get", db_journal_get},
                                     {"journal", db_journal},
                                     {"journal_count", db_journal_count},
                                     {"runs", db_runs},
                                     {"run", db_run},
                                     {"candidates", db_candidates},
                                     {"evaluations", db_evaluations},
                                     {"best", db_best},
                                     {"top", db_top},
                                     {"verdicts", db_verdicts},
                                     {"path", db_path},
                                     {"close", db_close},
                                     {NULL, NULL}};
  static const luaL_Reg fns[] = {
      {"open", archive_open}, {"default_path", archive_default_path}, {NULL, NULL}};
  kevo_l_newclass(L, DB_MT, methods, db_close, db_tostring);
  luaL_newlib(L, fns);
  lua_pushinteger(L, KEVO_ARCHIVE_SCHEMA);
  lua_setfield(L, -2, "schema_version");
  return 1;
}
