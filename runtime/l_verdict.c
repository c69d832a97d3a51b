/* kevo.verdict: the verdicts of an evaluation result, from the one C table (proto.h):
 *   verdict.list    {"ok", "compile_error", ...}: ok first, then failures in report order
 *   verdict.meaning {ok = "one line", ...}
 */
#include "lutil.h"
#include "proto.h"

int luaopen_kevo_verdict(lua_State *L);
int luaopen_kevo_verdict(lua_State *L) {
  lua_createtable(L, 0, 2);
  lua_newtable(L); /* stack: M list */
  lua_newtable(L); /* stack: M list meaning */
  for (int i = 0; kevo_verdicts[i].name; i++) {
    lua_pushstring(L, kevo_verdicts[i].name);
    lua_rawseti(L, -3, i + 1);
    lua_pushstring(L, kevo_verdicts[i].meaning);
    lua_setfield(L, -2, kevo_verdicts[i].name);
  }
  lua_setfield(L, -3, "meaning");
  lua_setfield(L, -2, "list");
  return 1;
}
