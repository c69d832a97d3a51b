#include "luastate.h"

#include "registry.h"
#include "resources.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Per-state bookkeeping. It lives in the allocator's ud (it must exist before the state does)
 * and is freed by kevo_lua_close after lua_close. */
typedef struct lua_ctx {
  kevo_lua_opts opts;
  size_t used, peak;
  uint64_t instructions;
  double started; /* monotonic seconds at the first hook, for the time budget */
  int spent;      /* a budget ran out: every further instruction raises */
} lua_ctx;

enum { HOOK_EVERY = 1000 };

/* Chunk names of kevo's own embedded Lua code. No file path can produce it (files get "@"),
 * and the sandbox's load() refuses it, so it marks code the sandbox may trust. */
#define EMBEDDED_CHUNK_PREFIX "=[kevo]"

/* Modules that reach outside the process (network, files, the archive, the GPU worker, API
 * keys). In a sandbox only kevo's own embedded code may require them: a strategy gets their
 * services through the context the host hands it, never the raw module. */
static const char *const privileged_modules[] = {
    "kevo.http",   "kevo.llm",    "kevo.config",   "kevo.archive",   "kevo.evaluator",
    "kevo.triton", "kevo.recipe", "kevo.torchref", "kevo.stratproc", NULL};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static lua_ctx *ctx_of(lua_State *L) {
  void *ud;
  lua_getallocf(L, &ud);
  return ud;
}

static void *ctx_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  lua_ctx *c = ud;
  if (!ptr) osize = 0;
  if (nsize == 0) {
    free(ptr);
    c->used -= osize;
    return NULL;
  }
  if (c->opts.mem_limit && nsize > osize && c->used - osize + nsize > c->opts.mem_limit)
    return NULL; /* Lua turns this into a memory error */
  void *p = realloc(ptr, nsize);
  if (!p) return NULL;
  c->used = c->used - osize + nsize;
  if (c->used > c->peak) c->peak = c->used;
  return p;
}

static void budget_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_ctx *c = ctx_of(L);
  if (!c->spent) {
    c->instructions += HOOK_EVERY;
    if (c->started == 0) c->started = now_s();
    if (c->opts.instr_limit && c->instructions > c->opts.instr_limit) c->spent = 1;
    if (c->opts.time_limit_s > 0 && now_s() - c->started > c->opts.time_limit_s) c->spent = 2;
  }
  if (c->spent) {
    /* Raise at every instruction from now on, in this coroutine too, so a pcall that caught
     * the first error cannot run on. */
    lua_sethook(L, budget_hook, LUA_MASKCOUNT, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    lua_State *main_thread = lua_tothread(L, -1);
    lua_pop(L, 1);
    if (main_thread && main_thread != L) lua_sethook(main_thread, budget_hook, LUA_MASKCOUNT, 1);
    luaL_error(L, "E_SANDBOX: %s budget spent (%s)", c->spent == 1 ? "instruction" : "time",
               c->spent == 1 ? "the script ran too many instructions" : "the script ran too long");
  }
}

const char *kevo_lua_find_embedded(const char *modname, size_t *len, const char **path) {
  char file[256], dotted[200];
  if (strlen(modname) >= sizeof dotted) return NULL;
  strcpy(dotted, modname);
  for (char *p = dotted; *p; p++)
    if (*p == '.') *p = '/';
  const char *forms[] = {"lua/%s.lua", "lua/%s/init.lua"};
  for (size_t i = 0; i < 2; i++) {
    snprintf(file, sizeof file, forms[i], dotted);
    const struct kevo_resource *r = kevo_resource_find(file);
    if (r) {
      if (len) *len = r->size;
      if (path) *path = r->name;
      return r->data;
    }
  }
  return NULL;
}

static const lua_CFunction *cmodule_find(const char *name) {
  for (const struct kevo_cmodule *m = kevo_cmodules; m->name; m++)
    if (strcmp(m->name, name) == 0) return (const lua_CFunction *)&m->open;
  return NULL;
}

/* Loads module `name` from kevo's own modules (C or embedded Lua). Pushes the loader and
 * its extra value and returns 2, or pushes an explanation and returns 1. */
static int push_kevo_loader(lua_State *L, const char *name) {
  const lua_CFunction *open = cmodule_find(name);
  if (open) {
    lua_pushcfunction(L, *open);
    lua_pushstring(L, name);
    return 2;
  }
  size_t len;
  const char *path;
  const char *code = kevo_lua_find_embedded(name, &len, &path);
  if (code) {
    char chunk[300];
    snprintf(chunk, sizeof chunk, "%s%s", EMBEDDED_CHUNK_PREFIX, path);
    if (kevo_lua_load(L, code, len, chunk) != LUA_OK) return lua_error(L);
    lua_pushstring(L, path);
    return 2;
  }
  lua_pushfstring(L, "no kevo module '%s'", name);
  return 1;
}

/* package.searchers entry for trusted states: kevo's modules come before the file system. */
static int searcher_kevo(lua_State *L) {
  return push_kevo_loader(L, luaL_checkstring(L, 1));
}

/* require() of a sandbox: kevo's modules only, cached in the registry's _LOADED. */
static int sandbox_require(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  lua_settop(L, 1);
  const char *const *only = ctx_of(L)->opts.only_modules;
  if (only) {
    const char *const *m = only;
    while (*m && strcmp(*m, name) != 0)
      m++;
    if (!*m)
      return luaL_error(L,
                        "E_SANDBOX: require '%s' is not allowed in a strategy (it runs in a "
                        "process of its own; what it may use comes through the context)",
                        name);
  }
  /* The caller is checked before the cache: once kevo's own code has loaded a privileged
   * module, a strategy must not get it from _LOADED either. */
  for (const char *const *p = privileged_modules; *p; p++) {
    if (strcmp(*p, name) != 0) continue;
    lua_Debug ar;
    int trusted = 0;
    if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "S", &ar))
      trusted = strncmp(ar.source, EMBEDDED_CHUNK_PREFIX, strlen(EMBEDDED_CHUNK_PREFIX)) == 0;
    if (!trusted)
      return luaL_error(L,
                        "E_SANDBOX: require '%s' is not allowed in a sandbox (it reaches outside "
                        "the process; use what the context offers)",
                        name);
  }
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE); /* stack: name loaded */
  if (lua_getfield(L, 2, name) != LUA_TNIL) return 1;
  lua_pop(L, 1);
  if (strcmp(name, "kevo") != 0 && strncmp(name, "kevo.", 5) != 0)
    return luaL_error(L, "E_SANDBOX: require '%s' is not allowed here (kevo modules only)", name);
  if (push_kevo_loader(L, name) != 2) return lua_error(L); /* stack: name loaded f extra */
  lua_pushvalue(L, 1);
  lua_insert(L, -2); /* stack: name loaded f name extra */
  lua_call(L, 2, 1);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushboolean(L, 1);
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, 2, name);
  return 1;
}

/* load() of a sandbox: text chunks only, in the sandbox's globals unless an env is given. */
static int sandbox_load(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  const char *name = luaL_optstring(L, 2, "=(load)");
  if (strncmp(name, EMBEDDED_CHUNK_PREFIX, strlen(EMBEDDED_CHUNK_PREFIX)) == 0)
    name = "=(load)"; /* that name marks kevo's own code */
  int has_env = !lua_isnone(L, 4);
  if (len > 0 && s[0] == LUA_SIGNATURE[0]) {
    luaL_pushfail(L);
    lua_pushliteral(L, "E_SANDBOX: binary chunks are not allowed");
    return 2;
  }
  if (luaL_loadbufferx(L, s, len, name, "t") != LUA_OK) {
    luaL_pushfail(L);
    lua_insert(L, -2);
    return 2;
  }
  if (has_env) {
    lua_pushvalue(L, 4);
    if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
  }
  return 1;
}

static int strict_index(lua_State *L) {
  return luaL_error(L, "E_SANDBOX: unknown global '%s'", lua_tostring(L, 2));
}

static int strict_newindex(lua_State *L) {
  return luaL_error(L, "E_SANDBOX: assignment to undeclared global '%s'", lua_tostring(L, 2));
}

static void open_lib(lua_State *L, const char *name, lua_CFunction f) {
  luaL_requiref(L, name, f, 1);
  lua_pop(L, 1);
}

/* Builds a sandbox's globals in the state's own global table. */
static void setup_sandbox(lua_State *L, uint64_t seed) {
  open_lib(L, LUA_GNAME, luaopen_base);
  open_lib(L, LUA_STRLIBNAME, luaopen_string);
  open_lib(L, LUA_TABLIBNAME, luaopen_table);
  open_lib(L, LUA_MATHLIBNAME, luaopen_math);
  open_lib(L, LUA_UTF8LIBNAME, luaopen_utf8);
  open_lib(L, LUA_COLIBNAME, luaopen_coroutine);

  lua_pushglobaltable(L);
  static const char *const removed[] = {"dofile", "loadfile", "collectgarbage", NULL};
  for (const char *const *r = removed; *r; r++) {
    lua_pushnil(L);
    lua_setfield(L, -2, *r);
  }
  lua_pushcfunction(L, sandbox_load);
  lua_setfield(L, -2, "load");
  lua_pushcfunction(L, sandbox_require);
  lua_setfield(L, -2, "require");
  lua_getfield(L, -1, "string"); /* stack: G string */
  lua_pushnil(L);
  lua_setfield(L, -2, "dump");
  lua_pop(L, 1);
  /* The string metatable's __index is the string table itself, now without dump. */

  lua_getfield(L, -1, "math"); /* stack: G math */
  lua_getfield(L, -1, "randomseed");
  lua_pushinteger(L, (lua_Integer)seed);
  lua_call(L, 1, 0);
  lua_pop(L, 1);

  lua_createtable(L, 0, 2); /* stack: G mt */
  lua_pushcfunction(L, strict_index);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, strict_newindex);
  lua_setfield(L, -2, "__newindex");
  lua_pushliteral(L, "sandboxed globals");
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  lua_pop(L, 1);
}

static void setup_trusted(lua_State *L) {
  luaL_openlibs(L);
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "searchers"); /* stack: package searchers */
  lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
  for (lua_Integer i = n; i >= 2; i--) { /* shift to insert at 2 */
    lua_rawgeti(L, -1, i);
    lua_rawseti(L, -2, i + 1);
  }
  lua_pushcfunction(L, searcher_kevo);
  lua_rawseti(L, -2, 2);
  lua_pop(L, 2);
}

lua_State *kevo_lua_new(const kevo_lua_opts *opts, kevo_error *err) {
  lua_ctx *c = calloc(1, sizeof *c);
  if (!c) {
    kevo_fail(err, KEVO_E_NOMEM, "cannot allocate a Lua state");
    return NULL;
  }
  if (opts) c->opts = *opts;
  lua_State *L = lua_newstate(ctx_alloc, c);
  if (!L) {
    free(c);
    kevo_fail(err, KEVO_E_NOMEM, "cannot allocate a Lua state (memory limit too small?)");
    return NULL;
  }
  lua_gc(L, LUA_GCGEN, 0, 0);
  if (c->opts.sandbox)
    setup_sandbox(L, c->opts.seed);
  else
    setup_trusted(L);
  if (c->opts.instr_limit || c->opts.time_limit_s > 0)
    lua_sethook(L, budget_hook, LUA_MASKCOUNT, HOOK_EVERY);
  return L;
}

void kevo_lua_close(lua_State *L) {
  if (!L) return;
  lua_ctx *c = ctx_of(L);
  lua_close(L);
  free(c);
}

static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

int kevo_lua_pcall(lua_State *L, int nargs, int nresults) {
  int base = lua_gettop(L) - nargs;
  lua_pushcfunction(L, traceback);
  lua_insert(L, base);
  int status = lua_pcall(L, nargs, nresults, base);
  lua_remove(L, base);
  lua_ctx *c = ctx_of(L);
  if (status == LUA_OK && c->spent) {
    /* A budget ran out but the error was swallowed on the way out (say by a coroutine that
     * returned between two hooks): the call still failed. */
    lua_settop(L, base - 1);
    lua_pushfstring(L, "E_SANDBOX: %s budget spent", c->spent == 1 ? "instruction" : "time");
    status = LUA_ERRRUN;
  }
  return status;
}

int kevo_lua_load(lua_State *L, const char *code, size_t len, const char *chunkname) {
  return luaL_loadbufferx(L, code, len, chunkname, "t");
}

int kevo_lua_budget_spent(lua_State *L) {
  return ctx_of(L)->spent != 0;
}

size_t kevo_lua_mem_used(lua_State *L) {
  return ctx_of(L)->used;
}
