/* kevo.json: JSON encode/decode on cJSON, for scripts, prompts and API bodies.
 *   json.decode(text) -> value | nil, msg, "E_PARSE"   (JSON null -> json.null; malformed or
 *       nested deeper than 200)
 *   json.encode(value [, {pretty=bool, canonical=bool}]) -> text
 *       (raises on values JSON cannot hold; canonical: object keys in byte order, so equal
 *       values give equal text: for hashing, caching and journal requests)
 * Tables with keys 1..n only (n >= 1) are arrays; json.array({}) marks an empty array;
 * other tables are objects with string keys. */
#include "lutil.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define JSON_NULL_KEY KEVO_L_JSON_NULL
#define JSON_ARRAY_MT KEVO_L_JSON_ARRAY

/* How deep the value nests (a scalar: 0). */
static int depth_of(const cJSON *it) {
  int d = 0;
  for (const cJSON *c = it ? it->child : NULL; c; c = c->next) {
    int k = depth_of(c) + 1;
    if (k > d) d = k;
  }
  return d;
}

static int json_decode(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(s, len, &end, 0);
  if (!root) {
    char msg[128];
    size_t at = end && end >= s ? (size_t)(end - s) : 0;
    snprintf(msg, sizeof msg, "malformed JSON near byte %zu", at);
    return kevo_l_fail(L, KEVO_E_PARSE, msg);
  }
  if (depth_of(root) > KEVO_L_JSON_DEPTH) { /* checked before pushing: nothing to leak */
    cJSON_Delete(root);
    return kevo_l_fail(L, KEVO_E_PARSE, "json.decode: nested too deep");
  }
  kevo_l_pushjson_marked(L, root);
  cJSON_Delete(root);
  return 1;
}

/* Is the table at idx an array (keys exactly 1..n, or marked as one)? */
static int is_array(lua_State *L, int idx, lua_Integer *n) {
  *n = (lua_Integer)lua_rawlen(L, idx);
  if (lua_getmetatable(L, idx)) {
    luaL_getmetatable(L, JSON_ARRAY_MT);
    int marked = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    if (marked) return 1;
  }
  if (*n == 0) return 0;
  lua_Integer count = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    count++;
  }
  return count == *n;
}

/* Encoding builds into a tree whose root sits in a userdata box with a __gc, and every item is
 * attached to its parent before its own children are made, so an error raised half-way
 * (a cycle, a bad key) leaks nothing. */
#define JSON_BOX_MT "kevo.json.box"

static int box_gc(lua_State *L) {
  cJSON **box = luaL_checkudata(L, 1, JSON_BOX_MT);
  cJSON_Delete(*box);
  *box = NULL;
  return 0;
}

static void attach(lua_State *L, cJSON **root, cJSON *parent, const char *key, cJSON *item) {
  if (!item) luaL_error(L, "json.encode: out of memory");
  if (!parent)
    *root = item;
  else if (key)
    cJSON_AddItemToObject(parent, key, item);
  else
    cJSON_AddItemToArray(parent, item);
}

static void add_value(lua_State *L, int idx, int depth, cJSON **root, cJSON *parent,
                      const char *key) {
  idx = lua_absindex(L, idx);
  if (depth > KEVO_L_JSON_DEPTH) luaL_error(L, "json.encode: nested too deep (a cycle?)");
  switch (lua_type(L, idx)) {
  case LUA_TNIL:
    attach(L, root, parent, key, cJSON_CreateNull());
    return;
  case LUA_TBOOLEAN:
    attach(L, root, parent, key, cJSON_CreateBool(lua_toboolean(L, idx)));
    return;
  case LUA_TNUMBER: {
    double d = lua_tonumber(L, idx);
    if (!isfinite(d)) luaL_error(L, "json.encode: %f cannot be written in JSON", d);
    attach(L, root, parent, key, cJSON_CreateNumber(d));
    return;
  }
  case LUA_TSTRING:
    attach(L, root, parent, key, cJSON_CreateString(lua_tostring(L, idx)));
    return;
  case LUA_TLIGHTUSERDATA:
  case LUA_TUSERDATA:
    lua_getfield(L, LUA_REGISTRYINDEX, JSON_NULL_KEY);
    if (lua_rawequal(L, -1, idx)) {
      lua_pop(L, 1);
      attach(L, root, parent, key, cJSON_CreateNull());
      return;
    }
    lua_pop(L, 1);
    break;
  case LUA_TTABLE: {
    luaL_checkstack(L, 4, "json.encode");
    lua_Integer n;
    if (is_array(L, idx, &n)) {
      cJSON *a = cJSON_CreateArray();
      attach(L, root, parent, key, a);
      for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, idx, i);
        add_value(L, -1, depth + 1, root, a, NULL);
        lua_pop(L, 1);
      }
      return;
    }
    cJSON *o = cJSON_CreateObject();
    attach(L, root, parent, key, o);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      if (lua_type(L, -2) != LUA_TSTRING)
        luaL_error(L, "json.encode: object keys must be strings (got %s)", luaL_typename(L, -2));
      add_value(L, -1, depth + 1, root, o, lua_tostring(L, -2));
      lua_pop(L, 1);
    }
    return;
  }
  default:
    break;
  }
  luaL_error(L, "json.encode: cannot encode a %s", luaL_typename(L, idx));
}

static int cmp_key(const void *a, const void *b) {
  return strcmp((*(cJSON *const *)a)->string, (*(cJSON *const *)b)->string);
}

/* Orders every object's members by key (byte order), for canonical text: the same value
 * always gives the same bytes, whatever order the Lua table holds it in. */
static int sort_keys(cJSON *it) {
  for (cJSON *c = it ? it->child : NULL; c; c = c->next)
    if (sort_keys(c)) return -1;
  if (!cJSON_IsObject(it) || !it->child) return 0;
  size_t n = 0;
  for (cJSON *c = it->child; c; c = c->next)
    n++;
  cJSON **v = malloc(n * sizeof *v);
  if (!v) return -1;
  n = 0;
  for (cJSON *c = it->child; c; c = c->next)
    v[n++] = c;
  qsort(v, n, sizeof *v, cmp_key);
  for (size_t i = 0; i < n; i++) {
    v[i]->prev = i ? v[i - 1] : v[n - 1]; /* cJSON: the first's prev is the last */
    v[i]->next = i + 1 < n ? v[i + 1] : NULL;
  }
  it->child = v[0];
  free(v);
  return 0;
}

static int json_encode(lua_State *L) {
  luaL_checkany(L, 1);
  kevo_l_checkopts(L, 2, "json.encode", (const char *const[]){"pretty", "canonical", NULL});
  int pretty = kevo_l_optbool(L, 2, "pretty", 0);
  int canonical = kevo_l_optbool(L, 2, "canonical", 0);
  cJSON **box = lua_newuserdatauv(L, sizeof *box, 0);
  *box = NULL;
  luaL_setmetatable(L, JSON_BOX_MT);
  add_value(L, 1, 0, box, NULL, NULL);
  if (canonical && sort_keys(*box)) return luaL_error(L, "json.encode: out of memory");
  char *text = pretty ? cJSON_Print(*box) : cJSON_PrintUnformatted(*box);
  if (!text) return luaL_error(L, "json.encode: out of memory");
  lua_pushstring(L, text);
  free(text);
  return 1;
}

/* json.array(t): marks t (default a new table) to encode as an array even when empty. */
static int json_array(lua_State *L) {
  if (lua_isnoneornil(L, 1)) lua_newtable(L);
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  luaL_setmetatable(L, JSON_ARRAY_MT);
  return 1;
}

static int null_tostring(lua_State *L) {
  lua_pushliteral(L, "json.null");
  return 1;
}

int luaopen_kevo_json(lua_State *L);
int luaopen_kevo_json(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"decode", json_decode}, {"encode", json_encode}, {"array", json_array}, {NULL, NULL}};
  luaL_newmetatable(L, JSON_ARRAY_MT);
  lua_pop(L, 1);
  if (luaL_newmetatable(L, JSON_BOX_MT)) {
    lua_pushcfunction(L, box_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  if (lua_getfield(L, LUA_REGISTRYINDEX, JSON_NULL_KEY) == LUA_TNIL) {
    lua_pop(L, 1);
    lua_newuserdatauv(L, 0, 0);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, null_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, JSON_NULL_KEY);
  }
  luaL_newlib(L, fns); /* stack: null lib */
  lua_insert(L, -2);
  lua_setfield(L, -2, "null");
  return 1;
}
