/* kevo.torchref: the PyTorch bridge from Lua (torchref.h, docs/kbench.md).
 *   torchref.describe(problem_py [, {python =, timeout =}]) -> JSON text | nil, msg, code
 *   torchref.python([python]) -> path of the interpreter | nil, msg, "E_UNSUPPORTED" */
#include "lutil.h"
#include "torchref.h"

#include <limits.h>
#include <stdlib.h>

static int l_describe(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  kevo_l_checkopts(L, 2, "torchref.describe", (const char *const[]){"python", "timeout", NULL});
  torchref_opts o = {.python = kevo_l_optstr(L, 2, "python", NULL),
                     .start_timeout_s = kevo_l_optnum(L, 2, "timeout", 0)};
  kevo_error err = {0};
  char *json = NULL;
  if (torchref_describe(path, &o, &json, &err)) return kevo_l_fail_err(L, &err);
  lua_pushstring(L, json);
  free(json);
  return 1;
}

static int l_python(lua_State *L) {
  char out[PATH_MAX];
  kevo_error err = {0};
  if (torchref_find_python(luaL_optstring(L, 1, NULL), out, sizeof out, &err))
    return kevo_l_fail_err(L, &err);
  lua_pushstring(L, out);
  return 1;
}

int luaopen_kevo_torchref(lua_State *L);
int luaopen_kevo_torchref(lua_State *L) {
  static const luaL_Reg fns[] = {{"describe", l_describe}, {"python", l_python}, {NULL, NULL}};
  luaL_newlib(L, fns);
  return 1;
}
