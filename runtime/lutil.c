#include "lutil.h"

#include "buf.h"
#include "luastate.h"
#include "registry.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int kevo_l_fail(lua_State *L, int status, const char *msg) {
  lua_pushnil(L);
  lua_pushfstring(L, "%s: %s", kevo_code(status), msg && *msg ? msg : kevo_strerror(status));
  lua_pushstring(L, kevo_code(status));
  return 3;
}

int kevo_l_fail_err(lua_State *L, const kevo_error *err) {
  return kevo_l_fail(L, err->status ? err->status : KEVO_E_INTERNAL, err->msg);
}

void kevo_l_checkopts(lua_State *L, int idx, const char *fname, const char *const allowed[]) {
  if (lua_isnoneornil(L, idx)) return;
  idx = lua_absindex(L, idx);
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1); /* stack: key */
    int ok = 0;
    if (lua_type(L, -1) == LUA_TSTRING) {
      const char *k = lua_tostring(L, -1);
      for (const char *const *a = allowed; *a && !ok; a++)
        ok = strcmp(*a, k) == 0;
    }
    if (!ok) {
      const char *key = luaL_tolstring(L, -1, NULL); /* stack: key, keystr */
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      for (const char *const *a = allowed; *a; a++) {
        if (a != allowed) luaL_addstring(&b, ", ");
        luaL_addstring(&b, *a);
      }
      luaL_pushresult(&b); /* stack: key, keystr, allowed */
      luaL_error(L, "%s: unknown option '%s' (allowed: %s)", fname, key, lua_tostring(L, -1));
    }
  }
}

static int getopt_field(lua_State *L, int idx, const char *key) {
  if (lua_isnoneornil(L, idx)) return LUA_TNIL;
  int t = lua_getfield(L, idx, key);
  if (t == LUA_TNIL) lua_pop(L, 1);
  return t;
}

lua_Integer kevo_l_optint(lua_State *L, int idx, const char *key, lua_Integer def) {
  if (getopt_field(L, idx, key) == LUA_TNIL) return def;
  int isint;
  lua_Integer v = lua_tointegerx(L, -1, &isint);
  if (!isint) luaL_error(L, "option '%s' must be an integer, got %s", key, luaL_typename(L, -1));
  lua_pop(L, 1);
  return v;
}

lua_Number kevo_l_optnum(lua_State *L, int idx, const char *key, lua_Number def) {
  if (getopt_field(L, idx, key) == LUA_TNIL) return def;
  int isnum;
  lua_Number v = lua_tonumberx(L, -1, &isnum);
  if (!isnum) luaL_error(L, "option '%s' must be a number, got %s", key, luaL_typename(L, -1));
  lua_pop(L, 1);
  return v;
}

const char *kevo_l_optstr(lua_State *L, int idx, const char *key, const char *def) {
  if (getopt_field(L, idx, key) == LUA_TNIL) return def;
  if (lua_type(L, -1) != LUA_TSTRING)
    luaL_error(L, "option '%s' must be a string, got %s", key, luaL_typename(L, -1));
  const char *s = lua_tostring(L, -1);
  lua_pop(L, 1); /* the string stays reachable from the option table */
  return s;
}

int kevo_l_optbool(lua_State *L, int idx, const char *key, int def) {
  if (getopt_field(L, idx, key) == LUA_TNIL) return def;
  if (lua_type(L, -1) != LUA_TBOOLEAN)
    luaL_error(L, "option '%s' must be a boolean, got %s", key, luaL_typename(L, -1));
  int v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

void kevo_l_newclass(lua_State *L, const char *tname, const luaL_Reg *methods, lua_CFunction gc,
                     lua_CFunction tostring) {
  luaL_newmetatable(L, tname);
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  lua_setfield(L, -2, "__index");
  if (gc) {
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__close");
  }
  if (tostring) {
    lua_pushcfunction(L, tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);
}

static void pushjson(lua_State *L, const cJSON *it, int depth, int marked) {
  luaL_checkstack(L, 4, "a JSON value");
  if (depth > KEVO_L_JSON_DEPTH || !it) {
    lua_pushnil(L);
  } else if (cJSON_IsNull(it)) {
    if (marked)
      lua_getfield(L, LUA_REGISTRYINDEX, KEVO_L_JSON_NULL);
    else
      lua_pushnil(L);
  } else if (cJSON_IsBool(it)) {
    lua_pushboolean(L, cJSON_IsTrue(it));
  } else if (cJSON_IsNumber(it)) {
    double d = it->valuedouble;
    if (d == floor(d) && fabs(d) < 9007199254740992.0)
      lua_pushinteger(L, (lua_Integer)d);
    else
      lua_pushnumber(L, d);
  } else if (cJSON_IsString(it)) {
    lua_pushstring(L, it->valuestring);
  } else if (cJSON_IsArray(it)) {
    lua_createtable(L, cJSON_GetArraySize(it), 0);
    if (marked) luaL_setmetatable(L, KEVO_L_JSON_ARRAY);
    lua_Integer i = 1;
    for (const cJSON *c = it->child; c; c = c->next) {
      pushjson(L, c, depth + 1, marked);
      lua_rawseti(L, -2, i++);
    }
  } else if (cJSON_IsObject(it)) {
    lua_createtable(L, 0, cJSON_GetArraySize(it));
    for (const cJSON *c = it->child; c; c = c->next) {
      pushjson(L, c, depth + 1, marked);
      lua_setfield(L, -2, c->string);
    }
  } else {
    lua_pushnil(L);
  }
}

void kevo_l_pushjson(lua_State *L, const cJSON *item) {
  pushjson(L, item, 0, 0);
}

void kevo_l_pushjson_marked(lua_State *L, const cJSON *item) {
  pushjson(L, item, 0, 1);
}

int kevo_l_read_file(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  kevo_buf b;
  kevo_error err = {0};
  kevo_buf_init(&b, KEVO_TEXT_FILE_CAP);
  if (kevo_read_file(path, &b, &err)) {
    kevo_buf_free(&b);
    return kevo_l_fail_err(L, &err);
  }
  lua_pushlstring(L, b.data, b.len);
  kevo_buf_free(&b);
  return 1;
}

void kevo_l_pushdiag(lua_State *L, int line, int col, const char *severity, const char *message) {
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, line);
  lua_setfield(L, -2, "line");
  lua_pushinteger(L, col);
  lua_setfield(L, -2, "col");
  lua_pushstring(L, severity);
  lua_setfield(L, -2, "severity");
  lua_pushstring(L, message);
  lua_setfield(L, -2, "message");
}

int kevo_l_mkdir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  struct stat st;
  if (mkdir(path, 0777) == 0) {
    lua_pushboolean(L, 1);
    lua_pushliteral(L, "made");
    return 2;
  }
  int e = errno;
  if (e == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    lua_pushboolean(L, 1);
    lua_pushliteral(L, "exists");
    return 2;
  }
  lua_pushnil(L);
  lua_pushfstring(L, "cannot make directory %s: %s", path,
                  e == EEXIST ? "a file has that name" : strerror(e));
  return 2;
}

int kevo_l_run_main(const char *cmd, const char *module, int argc, char **argv,
                    const luaL_Reg *host) {
  kevo_error err = {0};
  lua_State *L = kevo_lua_new(&(kevo_lua_opts){0}, &err);
  if (!L) {
    fprintf(stderr, "kevo %s: %s\n", cmd, err.msg);
    return KEVO_EXIT_FAILED;
  }
  int rc = KEVO_EXIT_FAILED;
  lua_getglobal(L, "require");
  lua_pushstring(L, module);
  if (kevo_lua_pcall(L, 1, 1) != LUA_OK) goto fail;
  lua_getfield(L, -1, "main"); /* stack: module main */
  lua_createtable(L, argc, 0);
  for (int i = 1; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i);
  }
  static const luaL_Reg files[] = {
      {"read_file", kevo_l_read_file}, {"mkdir", kevo_l_mkdir}, {NULL, NULL}};
  lua_newtable(L); /* stack: module main args host */
  luaL_setfuncs(L, files, 0);
  if (host) luaL_setfuncs(L, host, 0);
  if (kevo_lua_pcall(L, 2, 1) != LUA_OK) goto fail;
  rc = (int)luaL_optinteger(L, -1, KEVO_EXIT_OK);
  kevo_lua_close(L);
  return rc;
fail:
  fprintf(stderr, "kevo %s: %s\n", cmd, lua_tostring(L, -1));
  kevo_lua_close(L);
  return KEVO_EXIT_FAILED;
}
