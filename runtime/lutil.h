/* lutil.h: small helpers shared by the binding files (l_*.c). */
#ifndef KEVO_LUTIL_H
#define KEVO_LUTIL_H

#include <lauxlib.h>
#include <lua.h>

#include "status.h"

/* The expected-failure return: pushes nil, "E_CODE: message", "E_CODE"; returns 3. */
int kevo_l_fail(lua_State *L, int status, const char *msg);
int kevo_l_fail_err(lua_State *L, const kevo_error *err);

/* Misuse raises: checks that the table at idx has only keys in `allowed` (NULL-terminated);
 * an unknown key raises "<fname>: unknown option 'x' (allowed: a, b, c)". idx may be absent
 * or nil (no options). */
void kevo_l_checkopts(lua_State *L, int idx, const char *fname, const char *const allowed[]);

/* Typed option readers for an option table at idx (which must already be checked). */
lua_Integer kevo_l_optint(lua_State *L, int idx, const char *key, lua_Integer def);
lua_Number kevo_l_optnum(lua_State *L, int idx, const char *key, lua_Number def);
const char *kevo_l_optstr(lua_State *L, int idx, const char *key, const char *def);
int kevo_l_optbool(lua_State *L, int idx, const char *key, int def);

/* Pushes a cJSON value as plain Lua data: objects and arrays become tables, null (and anything
 * nested deeper than KEVO_L_JSON_DEPTH) nil, integral numbers integers. For results that C
 * hands to scripts. The _marked form is kevo.json.decode's: null becomes json.null and arrays
 * carry the json.array metatable, so that encode gives the same JSON back (kevo.json must be
 * loaded, which registers both). */
typedef struct cJSON cJSON;
enum { KEVO_L_JSON_DEPTH = 200 };
#define KEVO_L_JSON_NULL "kevo.json.null"   /* registry key of json.null */
#define KEVO_L_JSON_ARRAY "kevo.json.array" /* metatable of arrays that decode made */
void kevo_l_pushjson(lua_State *L, const cJSON *item);
void kevo_l_pushjson_marked(lua_State *L, const cJSON *item);

/* Pushes one compiler diagnostic as {line=, col=, severity=, message=} (kevo.cuda and
 * kevo.triton report them the same way). */
void kevo_l_pushdiag(lua_State *L, int line, int col, const char *severity, const char *message);

/* read_file(path) -> contents | nil, msg, code: for the host tables that commands hand their
 * trusted driver code (kevo run, kevo replay); never part of a module a sandbox can require. */
int kevo_l_read_file(lua_State *L);

/* mkdir(path) -> true, "made" | true, "exists" | nil, message: one directory, parents not
 * made. For the host tables that commands hand their trusted Lua (Lua has no mkdir). */
int kevo_l_mkdir(lua_State *L);

/* The body of a command whose work lives in Lua: in a fresh trusted state, calls
 * require(module).main(args, host), args being argv[1..] and host a table of read_file and
 * mkdir (above) and the given C functions (NULL: no more), and returns main's integer result (none:
 * 0). A failure to load or an uncaught error prints "kevo <cmd>: message" and returns 1. */
int kevo_l_run_main(const char *cmd, const char *module, int argc, char **argv,
                    const luaL_Reg *host);

/* Registers metatable `tname` with methods (as __index), __gc/__close = gc, __tostring. */
void kevo_l_newclass(lua_State *L, const char *tname, const luaL_Reg *methods, lua_CFunction gc,
                     lua_CFunction tostring);

#endif
