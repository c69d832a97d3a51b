/* kevo.strategy_core: the strategies embedded in the binary (strategies/<name>.lua), for
 * kevo.strategy. Read-only and harmless in a sandbox.
 *   strategy_core.source(name) -> text, "strategies/<name>.lua" | nil, msg, "E_ARG"
 *   strategy_core.list() -> {"autotune", "beam", ...} (sorted) */
#include "lutil.h"
#include "resources.h"

#include <stdio.h>
#include <string.h>

static const char PREFIX[] = "strategies/";
static const char SUFFIX[] = ".lua";

static int core_source(lua_State *L) {
  size_t len;
  const char *name = luaL_checklstring(L, 1, &len);
  char path[256];
  if (len == 0 || len > 200 || strchr(name, '/'))
    return kevo_l_fail(L, KEVO_E_ARG, "bad strategy name");
  snprintf(path, sizeof path, "%s%s%s", PREFIX, name, SUFFIX);
  const struct kevo_resource *r = kevo_resource_find(path);
  if (!r) {
    char msg[300];
    snprintf(msg, sizeof msg, "no strategy named '%s'", name);
    return kevo_l_fail(L, KEVO_E_ARG, msg);
  }
  lua_pushlstring(L, r->data, r->size);
  lua_pushstring(L, r->name);
  return 2;
}

static int core_list(lua_State *L) {
  lua_newtable(L);
  lua_Integer n = 0;
  size_t plen = sizeof PREFIX - 1, slen = sizeof SUFFIX - 1;
  for (const struct kevo_resource *r = kevo_resources; r->name; r++) { /* already sorted */
    size_t len = strlen(r->name);
    if (len <= plen + slen || strncmp(r->name, PREFIX, plen) != 0 ||
        strcmp(r->name + len - slen, SUFFIX) != 0 || strchr(r->name + plen, '/'))
      continue;
    lua_pushlstring(L, r->name + plen, len - plen - slen);
    lua_rawseti(L, -2, ++n);
  }
  return 1;
}

int luaopen_kevo_strategy_core(lua_State *L);
int luaopen_kevo_strategy_core(lua_State *L) {
  static const luaL_Reg fns[] = {{"source", core_source}, {"list", core_list}, {NULL, NULL}};
  luaL_newlib(L, fns);
  return 1;
}
