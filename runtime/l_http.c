/* kevo.http: concurrent HTTP requests for the LLM layer (and anything else that talks HTTP).
 *   local c = http.client{concurrency = 8}              -- kevo.http.Client
 *   local res = c:request_many({ {url=, method=, headers=, body=, auth=, connect_timeout=,
 *                                 timeout=, stall_timeout=, delay=, max_body=}, ... }
 *                              [, on_done])
 *   -- res[i] = {status=, headers={lowercase name = value}, body=, ms=, reused=,
 *   --           error="E_TIMEOUT: ..." or nil, code="E_TIMEOUT" or nil}
 *   -- on_done(i, res[i]) is called as each request ends, while the others are still in
 *   -- flight (a reply can be stored the moment it arrives); if it raises, the batch is
 *   -- abandoned (transfers in flight dropped) and request_many raises that error.
 *   c:close()                                           -- also __close/__gc
 *   http.env_present(name) -> bool                      -- is the variable set (never its value)
 * Times are seconds. `auth = {header = "Authorization", prefix = "Bearer ", env = "VAR"}` names
 * the variable holding the key: C reads it when the transfer starts, so the key never enters
 * Lua and never appears in results. The connections of a client are reused across calls. */
#include "http.h"
#include "lutil.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define CLIENT_MT "kevo.http.Client"
#define BATCH_MT "kevo.http.Batch"
enum { MAX_REQUESTS = 4096, MAX_HEADERS = 64 };

typedef struct client_box {
  kevo_http_client *c;
  int concurrency;
} client_box;

/* A batch's C memory lives in a userdata so a raise half-way frees it through __gc. */
typedef struct batch_box {
  size_t n;
  kevo_http_request *reqs;
  kevo_http_response *resps;
  const char **lines; /* header lines, MAX_HEADERS per request */
} batch_box;

static client_box *check_client(lua_State *L, int idx) {
  client_box *b = luaL_checkudata(L, idx, CLIENT_MT);
  if (!b->c) luaL_error(L, "kevo.http.Client: the client is closed");
  return b;
}

static int client_gc(lua_State *L) {
  client_box *b = luaL_checkudata(L, 1, CLIENT_MT);
  kevo_http_client_free(b->c);
  b->c = NULL;
  return 0;
}

static int client_tostring(lua_State *L) {
  client_box *b = luaL_checkudata(L, 1, CLIENT_MT);
  if (b->c)
    lua_pushfstring(L, "kevo.http.Client (concurrency %d)", b->concurrency);
  else
    lua_pushliteral(L, "kevo.http.Client (closed)");
  return 1;
}

static int batch_gc(lua_State *L) {
  batch_box *b = luaL_checkudata(L, 1, BATCH_MT);
  if (b->resps)
    for (size_t i = 0; i < b->n; i++)
      kevo_http_response_free(&b->resps[i]);
  free(b->resps);
  free(b->reqs);
  free(b->lines);
  memset(b, 0, sizeof *b);
  return 0;
}

static int http_client(lua_State *L) {
  kevo_l_checkopts(L, 1, "http.client", (const char *const[]){"concurrency", NULL});
  lua_Integer conc = kevo_l_optint(L, 1, "concurrency", 8);
  if (conc < 1 || conc > 256) return luaL_error(L, "http.client: concurrency must be 1..256");
  client_box *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->c = NULL;
  b->concurrency = (int)conc;
  luaL_setmetatable(L, CLIENT_MT);
  kevo_error err = {0};
  if (kevo_http_client_new(&b->c, (int)conc, &err)) return kevo_l_fail_err(L, &err);
  return 1;
}

static long opt_ms(lua_State *L, int idx, const char *key, double max_s) {
  lua_Number s = kevo_l_optnum(L, idx, key, 0);
  if (s < 0 || s > max_s) luaL_error(L, "request option '%s' must be 0..%f seconds", key, max_s);
  return (long)(s * 1000.0 + 0.5);
}

static int bad_header_text(const char *s) {
  return strpbrk(s, "\r\n") != NULL;
}

/* Fills rq from the request table at idx; strings it builds are anchored in the table at
 * `anchor` so they live as long as the call. */
static void read_request(lua_State *L, int idx, int anchor, kevo_http_request *rq,
                         const char **lines) {
  static const char *const keys[] = {"url",   "method",          "headers", "body",
                                     "auth",  "connect_timeout", "timeout", "stall_timeout",
                                     "delay", "max_body",        NULL};
  kevo_l_checkopts(L, idx, "request_many: request", keys);
  rq->url = kevo_l_optstr(L, idx, "url", NULL);
  if (!rq->url) luaL_error(L, "request_many: a request needs a url");
  rq->method = kevo_l_optstr(L, idx, "method", NULL);
  if (lua_getfield(L, idx, "body") == LUA_TSTRING) {
    rq->body = lua_tolstring(L, -1, &rq->body_len);
    if (!rq->method) rq->method = "POST";
  } else if (!lua_isnil(L, -1)) {
    luaL_error(L, "request_many: body must be a string");
  }
  lua_pop(L, 1);
  if (!rq->method) rq->method = "GET";
  rq->connect_timeout_ms = opt_ms(L, idx, "connect_timeout", 3600);
  rq->total_timeout_ms = opt_ms(L, idx, "timeout", 24 * 3600);
  rq->stall_timeout_ms = opt_ms(L, idx, "stall_timeout", 3600);
  rq->delay_ms = opt_ms(L, idx, "delay", 3600);
  lua_Integer max_body = kevo_l_optint(L, idx, "max_body", 0);
  if (max_body < 0 || max_body > (lua_Integer)1 << 30)
    luaL_error(L, "request_many: max_body must be 0..2^30 bytes");
  rq->max_body = (size_t)max_body;

  rq->headers = lines;
  rq->nheaders = 0;
  int t = lua_getfield(L, idx, "headers");
  if (t == LUA_TTABLE) {
    lua_pushnil(L);
    while (lua_next(L, -2)) { /* stack: headers name value */
      if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
        luaL_error(L, "request_many: headers must map names to strings");
      const char *name = lua_tostring(L, -2), *value = lua_tostring(L, -1);
      if (bad_header_text(name) || bad_header_text(value) || strchr(name, ':'))
        luaL_error(L, "request_many: header '%s' holds a line break or colon", name);
      if (rq->nheaders >= MAX_HEADERS) luaL_error(L, "request_many: too many headers");
      lines[rq->nheaders++] = lua_pushfstring(L, "%s: %s", name, value);
      lua_rawseti(L, anchor, (lua_Integer)lua_rawlen(L, anchor) + 1);
      lua_pop(L, 1);
    }
  } else if (t != LUA_TNIL) {
    luaL_error(L, "request_many: headers must be a table");
  }
  lua_pop(L, 1);

  t = lua_getfield(L, idx, "auth");
  if (t == LUA_TTABLE) {
    int a = lua_gettop(L);
    kevo_l_checkopts(L, a, "request_many: auth",
                     (const char *const[]){"header", "prefix", "env", NULL});
    rq->auth_header = kevo_l_optstr(L, a, "header", NULL);
    rq->auth_prefix = kevo_l_optstr(L, a, "prefix", "");
    rq->auth_env = kevo_l_optstr(L, a, "env", NULL);
    if (!rq->auth_header || !rq->auth_env) luaL_error(L, "request_many: auth needs header and env");
    if (bad_header_text(rq->auth_header) || bad_header_text(rq->auth_prefix))
      luaL_error(L, "request_many: auth header holds a line break");
    lua_pushvalue(L, a); /* anchor the auth table's strings */
    lua_rawseti(L, anchor, (lua_Integer)lua_rawlen(L, anchor) + 1);
  } else if (t != LUA_TNIL) {
    luaL_error(L, "request_many: auth must be a table");
  }
  lua_pop(L, 1);
}

/* Turns raw header lines into {lowercase name = value}; repeated names are joined by ", ". */
static void push_headers(lua_State *L, const kevo_buf *raw) {
  lua_newtable(L);
  const char *p = raw->data ? raw->data : "", *end = p + raw->len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *eol = nl ? nl : end;
    const char *colon = memchr(p, ':', (size_t)(eol - p));
    if (colon && colon > p) {
      char name[128];
      size_t nlen = (size_t)(colon - p);
      if (nlen < sizeof name) {
        for (size_t i = 0; i < nlen; i++)
          name[i] = (char)tolower((unsigned char)p[i]);
        name[nlen] = 0;
        const char *v = colon + 1, *ve = eol;
        while (v < ve && (*v == ' ' || *v == '\t'))
          v++;
        while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
          ve--;
        if (lua_getfield(L, -1, name) == LUA_TSTRING) { /* stack: t old */
          lua_pushliteral(L, ", ");
          lua_pushlstring(L, v, (size_t)(ve - v));
          lua_concat(L, 3);
        } else {
          lua_pop(L, 1);
          lua_pushlstring(L, v, (size_t)(ve - v));
        }
        lua_setfield(L, -2, name);
      }
    }
    p = eol + 1;
  }
}

/* Pushes the Lua form of one response. */
static void push_response(lua_State *L, const kevo_http_response *r) {
  lua_createtable(L, 0, 8);
  lua_pushinteger(L, r->status);
  lua_setfield(L, -2, "status");
  push_headers(L, &r->headers);
  lua_setfield(L, -2, "headers");
  lua_pushlstring(L, r->body.data ? r->body.data : "", r->body.len);
  lua_setfield(L, -2, "body");
  lua_pushnumber(L, r->ms);
  lua_setfield(L, -2, "ms");
  lua_pushboolean(L, r->new_connects == 0 && r->status != 0);
  lua_setfield(L, -2, "reused");
  if (r->error) {
    lua_pushfstring(L, "%s: %s", kevo_code(r->error), r->errmsg);
    lua_setfield(L, -2, "error");
    lua_pushstring(L, kevo_code(r->error));
    lua_setfield(L, -2, "code");
  }
}

/* Run under lua_pcall as a request ends. stack: results on_done|nil response* index */
static int deliver_protected(lua_State *L) {
  const kevo_http_response *r = lua_touserdata(L, 3);
  lua_Integer i = lua_tointeger(L, 4);
  push_response(L, r); /* stack: results on_done response* index res */
  lua_pushvalue(L, -1);
  lua_rawseti(L, 1, i);
  if (!lua_isnil(L, 2)) {
    lua_pushvalue(L, 2);
    lua_pushinteger(L, i);
    lua_pushvalue(L, 5);
    lua_call(L, 2, 0);
  }
  return 0;
}

typedef struct deliver_ud {
  lua_State *L;
  int results, on_done; /* stack slots of the results table and the callback (or nil) */
  int failed;           /* the Lua side raised: its error object is on top of the stack */
} deliver_ud;

/* kevo_http_done_fn: the response goes into the results table and to on_done, protected, so
 * an error (or a memory cap) in Lua cannot jump over the transfers kevo_http_run_each holds. */
static int deliver(void *ud, size_t index, kevo_http_response *resp) {
  deliver_ud *u = ud;
  lua_State *L = u->L;
  lua_pushcfunction(L, deliver_protected);
  lua_pushvalue(L, u->results);
  lua_pushvalue(L, u->on_done);
  lua_pushlightuserdata(L, resp);
  lua_pushinteger(L, (lua_Integer)index + 1);
  if (lua_pcall(L, 4, 0, 0) != LUA_OK) { /* stack: ... error */
    u->failed = 1;
    return KEVO_E_INTERNAL; /* stops the batch; the Lua error is what is raised */
  }
  return KEVO_OK;
}

static int client_request_many(lua_State *L) {
  client_box *cb = check_client(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  if (!lua_isnoneornil(L, 3)) luaL_checktype(L, 3, LUA_TFUNCTION);
  size_t n = (size_t)lua_rawlen(L, 2);
  if (n > MAX_REQUESTS) return luaL_error(L, "request_many: at most %d requests", MAX_REQUESTS);
  lua_settop(L, 3);
  batch_box *b = lua_newuserdatauv(L, sizeof *b, 0); /* stack: c list on_done batch */
  memset(b, 0, sizeof *b);
  luaL_setmetatable(L, BATCH_MT);
  lua_newtable(L);               /* stack: c list on_done batch anchor */
  lua_createtable(L, (int)n, 0); /* stack: c list on_done batch anchor results */
  if (n == 0) return 1;
  b->reqs = calloc(n, sizeof *b->reqs);
  b->resps = calloc(n, sizeof *b->resps);
  b->lines = calloc(n * MAX_HEADERS, sizeof *b->lines);
  if (!b->reqs || !b->resps || !b->lines) return luaL_error(L, "request_many: out of memory");
  for (size_t i = 0; i < n; i++)
    kevo_http_response_init(&b->resps[i]);
  b->n = n;
  for (size_t i = 0; i < n; i++) {
    if (lua_rawgeti(L, 2, (lua_Integer)i + 1) != LUA_TTABLE)
      return luaL_error(L, "request_many: request %d is not a table", (int)i + 1);
    read_request(L, lua_gettop(L), 5, &b->reqs[i], &b->lines[i * MAX_HEADERS]);
    lua_pop(L, 1);
  }
  kevo_error err = {0};
  deliver_ud u = {L, 6, 3, 0};
  int rc = kevo_http_run_each(cb->c, b->reqs, b->resps, n, deliver, &u, &err);
  if (u.failed) return lua_error(L); /* the batch's memory goes with its userdata's __gc */
  if (rc) return kevo_l_fail_err(L, &err);
  lua_pushcfunction(L, batch_gc);
  lua_pushvalue(L, 4);
  lua_call(L, 1, 0);
  lua_settop(L, 6);
  return 1;
}

static int http_env_present(lua_State *L) {
  const char *v = getenv(luaL_checkstring(L, 1));
  lua_pushboolean(L, v && *v);
  return 1;
}

int luaopen_kevo_http(lua_State *L);
int luaopen_kevo_http(lua_State *L) {
  static const luaL_Reg methods[] = {
      {"request_many", client_request_many}, {"close", client_gc}, {NULL, NULL}};
  kevo_l_newclass(L, CLIENT_MT, methods, client_gc, client_tostring);
  if (luaL_newmetatable(L, BATCH_MT)) {
    lua_pushcfunction(L, batch_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {
      {"client", http_client}, {"env_present", http_env_present}, {NULL, NULL}};
  luaL_newlib(L, fns);
  return 1;
}
