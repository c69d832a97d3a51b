/* The binding helpers in runtime/lutil.c: option checking (the message names the bad key and
 * lists the allowed ones), typed option readers, and the JSON walker's depth cap. */
#include "check.h"
#include "luastate.h"
#include "lutil.h"

#include <cjson/cJSON.h>
#include <lauxlib.h>
#include <lua.h>

static const char *const allowed[] = {"arch", "defines", "timeout", NULL};

/* stack: opts -> checks them; pushes nothing */
static int call_checkopts(lua_State *L) {
  kevo_l_checkopts(L, 1, "cuda.compile", allowed);
  lua_settop(L, 1);
  lua_Integer n = kevo_l_optint(L, 1, "timeout", 7);
  lua_pushinteger(L, n);
  return 1;
}

/* Runs `return <expr>` and passes the result to call_checkopts under pcall; copies the result
 * or the error message. */
static int checkopts_on(lua_State *L, const char *expr, char *out, size_t outlen) {
  lua_settop(L, 0);
  lua_pushcfunction(L, call_checkopts);
  char code[256];
  snprintf(code, sizeof code, "return %s", expr);
  if (luaL_dostring(L, code) != LUA_OK) {
    snprintf(out, outlen, "load: %s", lua_tostring(L, -1));
    return -1;
  }
  int st = lua_pcall(L, 1, 1, 0);
  const char *s = luaL_tolstring(L, -1, NULL);
  snprintf(out, outlen, "%s", s ? s : "");
  return st;
}

int main(void) {
  kevo_error err = {0};
  lua_State *L = kevo_lua_new(&(kevo_lua_opts){0}, &err);
  CHECK(L != NULL);
  if (!L) CHECK_DONE();
  char msg[1024];

  CHECK(checkopts_on(L, "nil", msg, sizeof msg) == LUA_OK);
  CHECK(strcmp(msg, "7") == 0);
  CHECK(checkopts_on(L, "{arch = 'sm_90', timeout = 3}", msg, sizeof msg) == LUA_OK);
  CHECK(strcmp(msg, "3") == 0);

  /* The bad key once, then every allowed key, in order (issue 15, item 21). */
  CHECK(checkopts_on(L, "{bogus = 1}", msg, sizeof msg) != LUA_OK);
  CHECK_STR_CONTAINS(msg, "cuda.compile: unknown option 'bogus' (allowed: arch, defines, timeout)");
  CHECK(checkopts_on(L, "{arch = 'sm_90', [7] = true}", msg, sizeof msg) != LUA_OK);
  CHECK_STR_CONTAINS(msg, "unknown option '7' (allowed: arch, defines, timeout)");
  CHECK(checkopts_on(L, "'notatable'", msg, sizeof msg) != LUA_OK);
  CHECK_STR_CONTAINS(msg, "table expected");

  CHECK(checkopts_on(L, "{timeout = 'soon'}", msg, sizeof msg) != LUA_OK);
  CHECK_STR_CONTAINS(msg, "option 'timeout' must be an integer, got string");

  /* JSON deeper than KEVO_L_JSON_DEPTH becomes nil below the cap instead of recursing on. */
  char deep[2 * (KEVO_L_JSON_DEPTH + 10) + 1];
  int n = KEVO_L_JSON_DEPTH + 10;
  for (int i = 0; i < n; i++) {
    deep[i] = '[';
    deep[2 * n - 1 - i] = ']';
  }
  deep[2 * n] = 0;
  cJSON *j = cJSON_Parse(deep);
  CHECK(j != NULL);
  lua_settop(L, 0);
  kevo_l_pushjson(L, j);
  cJSON_Delete(j);
  CHECK(lua_istable(L, -1));
  int depth = 0;
  while (lua_istable(L, -1)) {
    lua_rawgeti(L, -1, 1);
    lua_remove(L, -2);
    depth++;
  }
  CHECK(depth == KEVO_L_JSON_DEPTH + 1);

  kevo_lua_close(L);
  CHECK_DONE();
}
