/* kevo.triton: compiling Triton kernels to cubins in a sandboxed compile server (triton.h).
 *   triton.compile(src, {kernel=, signature=, constexprs=, num_warps=, num_stages=, arch=,
 *                        name=, timeout=})  -> module, info | nil, "E_X: msg", "E_X", info
 *   triton.compile_many({{src=, kernel=, ...}, ...}) -> {{module=, info=} | {error=, code=, info=}}
 *   triton.available() -> true, version | nil, why
 *   triton.configure{python=, servers=, timeout=, start_timeout=, disk_cache=,
 *                    keep_user=, allowlist=}  (restarts servers; the last two: tests only)
 *   triton.sandbox() -> {landlock = abi (0: none), note =, python =}
 *   triton.selftest{write = path} -> {pid, cwd, env = {names}, write = "allowed"|"denied: ..."}
 *   triton.stop()  stops the servers (the next compile starts them again)
 * module:cubin() -> bytes; module:close(). info: name (entry in the cubin), num_warps, threads
 * (block size), shared (dynamic shared memory bytes), extra_args ({name, bytes_per_program,
 * align}: what the calling convention appends), params, constexprs, arch, triton_version, ms,
 * cached (false | "memory" | "disk"), hash, diagnostics ({line, col, severity, message}). */
#include "lutil.h"
#include "triton.h"

#include <cjson/cJSON.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL_MT "kevo.triton.Pool"
#define MODULE_MT "kevo.triton.Module"
#define POOL_KEY "kevo.triton.pool"

typedef struct lpool {
  triton_pool *pool;
  triton_pool_opts o;
  char python[PATH_MAX];
} lpool;

/* --- the pool, one per Lua state, in the registry -------------------------------------------- */

static int pool_gc(lua_State *L) {
  lpool *lp = luaL_checkudata(L, 1, POOL_MT);
  triton_pool_free(lp->pool);
  lp->pool = NULL;
  return 0;
}

static int pool_tostring(lua_State *L) {
  lpool *lp = luaL_checkudata(L, 1, POOL_MT);
  lua_pushfstring(L, "kevo.triton.Pool (%s)", lp->pool ? "running" : "stopped");
  return 1;
}

static lpool *get_lpool(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, POOL_KEY) == LUA_TUSERDATA) {
    lpool *lp = lua_touserdata(L, -1);
    lua_pop(L, 1);
    return lp;
  }
  lua_pop(L, 1);
  lpool *lp = lua_newuserdatauv(L, sizeof *lp, 0);
  memset(lp, 0, sizeof *lp);
  luaL_setmetatable(L, POOL_MT);
  lua_setfield(L, LUA_REGISTRYINDEX, POOL_KEY);
  return lp;
}

/* The running pool, started on first use; NULL with err filled when it cannot be made. */
static triton_pool *get_pool(lua_State *L, kevo_error *err) {
  lpool *lp = get_lpool(L);
  if (!lp->pool) {
    lp->o.python = lp->python[0] ? lp->python : NULL;
    if (triton_pool_new(&lp->o, &lp->pool, err)) return NULL;
  }
  return lp->pool;
}

/* --- Lua values <-> JSON ---------------------------------------------------------------------- */

/* Raises unless the value at idx is a scalar (string, finite number, boolean) or a table (a
 * list 1..n, or string keys) of such values: checked before converting, so that converting
 * never raises with JSON half built. */
static void check_json(lua_State *L, int idx, const char *what, int depth) {
  idx = lua_absindex(L, idx);
  if (depth > 8) luaL_error(L, "triton: %s is nested too deep", what);
  switch (lua_type(L, idx)) {
  case LUA_TSTRING:
  case LUA_TBOOLEAN:
    return;
  case LUA_TNUMBER:
    if (!lua_isinteger(L, idx) && !isfinite(lua_tonumber(L, idx)))
      luaL_error(L, "triton: %s holds a number that is not finite", what);
    return;
  case LUA_TTABLE:
    break;
  default:
    luaL_error(L, "triton: %s holds a %s", what, luaL_typename(L, idx));
  }
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx), count = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) { /* stack: key value */
    count++;
    if (n == 0 && lua_type(L, -2) != LUA_TSTRING)
      luaL_error(L, "triton: %s must have string keys or be a list", what);
    check_json(L, -1, what, depth + 1);
    lua_pop(L, 1);
  }
  if (n > 0 && count != n) luaL_error(L, "triton: %s mixes a list and keys", what);
}

static cJSON *to_json(lua_State *L, int idx, int depth) {
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
  case LUA_TSTRING:
    return cJSON_CreateString(lua_tostring(L, idx));
  case LUA_TBOOLEAN:
    return cJSON_CreateBool(lua_toboolean(L, idx));
  case LUA_TNUMBER: {
    if (lua_isinteger(L, idx)) return cJSON_CreateNumber((double)lua_tointeger(L, idx));
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", lua_tonumber(L, idx));
    if (!strpbrk(buf, ".eE")) strcat(buf, ".0"); /* stays a float in Python */
    return cJSON_CreateRaw(buf);
  }
  default:
    break;
  }
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
  cJSON *out = n > 0 ? cJSON_CreateArray() : cJSON_CreateObject();
  if (n > 0) {
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, idx, i);
      cJSON_AddItemToArray(out, to_json(L, -1, depth + 1));
      lua_pop(L, 1);
    }
    return out;
  }
  lua_pushnil(L);
  while (lua_next(L, idx)) { /* stack: key value */
    cJSON_AddItemToObject(out, lua_tostring(L, -2), to_json(L, -1, depth + 1));
    lua_pop(L, 1);
  }
  return out;
}

/* --- modules and results -----------------------------------------------------------------------
 */

static triton_module **check_module(lua_State *L, int idx) {
  triton_module **m = luaL_checkudata(L, idx, MODULE_MT);
  if (!*m) luaL_error(L, "triton: module is closed");
  return m;
}

static int module_gc(lua_State *L) {
  triton_module **m = luaL_checkudata(L, 1, MODULE_MT);
  triton_module_free(*m);
  *m = NULL;
  return 0;
}

static int module_tostring(lua_State *L) {
  triton_module **m = luaL_checkudata(L, 1, MODULE_MT);
  if (*m)
    lua_pushfstring(L, "kevo.triton.Module (%s, %d bytes)", (*m)->name, (int)(*m)->cubin_size);
  else
    lua_pushstring(L, "kevo.triton.Module (closed)");
  return 1;
}

static int module_cubin(lua_State *L) {
  triton_module **m = check_module(L, 1);
  lua_pushlstring(L, (const char *)(*m)->cubin, (*m)->cubin_size);
  return 1;
}

/* stack: +1 info table (for successes and failures alike) */
static void push_info(lua_State *L, const triton_module *m, double ms) {
  lua_newtable(L);
  lua_pushnumber(L, m ? m->compile_ms : ms);
  lua_setfield(L, -2, "ms");
  if (m && m->cached)
    lua_pushstring(L, m->cached == 1 ? "memory" : "disk");
  else
    lua_pushboolean(L, 0);
  lua_setfield(L, -2, "cached");
  if (!m) return;
  lua_pushstring(L, m->hash);
  lua_setfield(L, -2, "hash");
  lua_newtable(L);
  for (size_t i = 0; i < m->ndiags; i++) {
    const triton_diag *d = &m->diags[i];
    kevo_l_pushdiag(L, d->line, d->col, d->severity, d->message);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "diagnostics");
  if (!m->ok) return;
  static const char *const copied[] = {
      "params",    "constexprs",     "num_ctas", "launch_pdl", "launch_cooperative_grid",
      "tmem_size", "triton_version", "phases",   NULL};
  for (const char *const *k = copied; *k; k++) {
    const cJSON *v = cJSON_GetObjectItem(m->info, *k);
    if (!v) continue;
    kevo_l_pushjson(L, v);
    lua_setfield(L, -2, *k);
  }
  lua_pushstring(L, m->name);
  lua_setfield(L, -2, "name");
  lua_pushstring(L, m->arch);
  lua_setfield(L, -2, "arch");
  lua_pushinteger(L, m->num_warps);
  lua_setfield(L, -2, "num_warps");
  lua_pushinteger(L, m->num_stages);
  lua_setfield(L, -2, "num_stages");
  lua_pushinteger(L, m->threads);
  lua_setfield(L, -2, "threads");
  lua_pushinteger(L, m->shared);
  lua_setfield(L, -2, "shared");
  lua_createtable(L, (int)m->nextra, 0);
  for (size_t i = 0; i < m->nextra; i++) {
    lua_createtable(L, 0, 3);
    lua_pushstring(L, m->extra[i].name);
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, (lua_Integer)m->extra[i].bytes_per_program);
    lua_setfield(L, -2, "bytes_per_program");
    lua_pushinteger(L, (lua_Integer)m->extra[i].align);
    lua_setfield(L, -2, "align");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "extra_args");
}

static const char *const compile_keys[] = {"kernel",    "signature",  "constexprs",
                                           "num_warps", "num_stages", "arch",
                                           "name",      "timeout",    NULL};

/* Fills o from an option table at idx (which also may hold src= when with_src). Raises on
 * misuse. With convert, makes the JSON (stored in sig/cx for the caller to delete): the caller
 * first calls without convert, so nothing raises while JSON is held. */
static void read_compile_opts(lua_State *L, int idx, int with_src, int convert,
                              triton_compile_opts *o, cJSON **sig, cJSON **cx) {
  static const char *const many_keys[] = {"src",       "kernel",     "signature", "constexprs",
                                          "num_warps", "num_stages", "arch",      "name",
                                          "timeout",   NULL};
  const char *fname = with_src ? "triton.compile_many" : "triton.compile";
  kevo_l_checkopts(L, idx, fname, with_src ? many_keys : compile_keys);
  if (with_src) {
    lua_getfield(L, idx, "src");
    if (!lua_isstring(L, -1)) luaL_error(L, "%s: each entry needs src (string)", fname);
    o->source = lua_tolstring(L, -1, &o->len);
    lua_pop(L, 1); /* the entry table keeps the string alive */
  }
  o->kernel = kevo_l_optstr(L, idx, "kernel", NULL);
  if (!o->kernel) luaL_error(L, "%s: option 'kernel' (string) is required", fname);
  o->filename = kevo_l_optstr(L, idx, "name", NULL);
  o->arch = kevo_l_optstr(L, idx, "arch", NULL);
  const char *option[] = {"num_warps", "num_stages"};
  int *value[] = {&o->num_warps, &o->num_stages};
  for (int i = 0; i < 2; i++) {
    char text[32];
    snprintf(text, sizeof text, "%lld", (long long)kevo_l_optint(L, idx, option[i], i ? 3 : 4));
    kevo_error e = {0};
    if (triton_option_value(option[i], text, value[i], &e)) luaL_error(L, "%s: %s", fname, e.msg);
  }
  o->timeout_s = kevo_l_optnum(L, idx, "timeout", 0);
  if (lua_getfield(L, idx, "signature") != LUA_TTABLE)
    luaL_error(L, "%s: option 'signature' (table) is required", fname);
  if (convert)
    *sig = to_json(L, -1, 0);
  else
    check_json(L, -1, "signature", 0);
  lua_pop(L, 1);
  int t = lua_getfield(L, idx, "constexprs");
  if (t != LUA_TTABLE && t != LUA_TNIL)
    luaL_error(L, "%s: option 'constexprs' must be a table", fname);
  if (t == LUA_TTABLE && convert)
    *cx = to_json(L, -1, 0);
  else if (t == LUA_TTABLE)
    check_json(L, -1, "constexprs", 0);
  lua_pop(L, 1);
  o->signature = convert ? *sig : NULL;
  o->constexprs = convert ? *cx : NULL;
}

static int l_compile(lua_State *L) {
  triton_compile_opts o = {0};
  o.source = luaL_checklstring(L, 1, &o.len);
  luaL_checktype(L, 2, LUA_TTABLE);
  cJSON *sig = NULL, *cx = NULL;
  read_compile_opts(L, 2, 0, 0, &o, &sig, &cx);
  triton_module **ud = lua_newuserdatauv(L, sizeof *ud, 0); /* before the resource */
  *ud = NULL;
  luaL_setmetatable(L, MODULE_MT);
  read_compile_opts(L, 2, 0, 1, &o, &sig, &cx); /* checked above: cannot raise */
  kevo_error err = {0};
  triton_pool *pool = get_pool(L, &err);
  int rc = pool ? triton_compile(pool, &o, ud, &err) : err.status;
  cJSON_Delete(sig);
  cJSON_Delete(cx);
  if (rc == KEVO_OK) {
    push_info(L, *ud, 0);
    return 2;
  }
  triton_module *m = *ud;
  kevo_l_fail_err(L, &err);
  push_info(L, m, 0);
  triton_module_free(m);
  *ud = NULL;
  return 4;
}

static int l_compile_many(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  size_t n = (size_t)lua_rawlen(L, 1);
  if (n > 4096) luaL_error(L, "triton.compile_many: at most 4096 sources at once");
  triton_compile_opts *o = lua_newuserdatauv(L, (n ? n : 1) * sizeof *o, 0);
  cJSON **js = lua_newuserdatauv(L, 2 * (n ? n : 1) * sizeof *js, 0);
  triton_module **out = lua_newuserdatauv(L, (n ? n : 1) * sizeof *out, 0);
  int *rcs = lua_newuserdatauv(L, (n ? n : 1) * sizeof *rcs, 0);
  kevo_error *errs = lua_newuserdatauv(L, (n ? n : 1) * sizeof *errs, 0);
  memset(o, 0, (n ? n : 1) * sizeof *o);
  memset(js, 0, 2 * (n ? n : 1) * sizeof *js);
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, 1, (lua_Integer)i + 1);
    if (!lua_istable(L, -1))
      luaL_error(L, "triton.compile_many: entry %d is not a table", (int)i + 1);
    read_compile_opts(L, lua_gettop(L), 1, 0, &o[i], &js[2 * i], &js[2 * i + 1]);
    lua_pop(L, 1);
  }
  for (size_t i = 0; i < n; i++) { /* all checked: nothing raises from here */
    lua_rawgeti(L, 1, (lua_Integer)i + 1);
    read_compile_opts(L, lua_gettop(L), 1, 1, &o[i], &js[2 * i], &js[2 * i + 1]);
    lua_pop(L, 1);
  }
  kevo_error err = {0};
  triton_pool *pool = get_pool(L, &err);
  if (pool) triton_compile_many(pool, o, n, out, rcs, errs);
  for (size_t i = 0; i < 2 * n; i++)
    cJSON_Delete(js[i]);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_createtable(L, 0, 3);
    if (!pool) {
      out[i] = NULL;
      rcs[i] = err.status;
      errs[i] = err;
    }
    if (rcs[i] == KEVO_OK) {
      triton_module **ud = lua_newuserdatauv(L, sizeof *ud, 0);
      *ud = out[i];
      luaL_setmetatable(L, MODULE_MT);
      lua_setfield(L, -2, "module");
      push_info(L, out[i], 0);
    } else {
      kevo_l_fail_err(L, &errs[i]); /* stack: nil msg code */
      lua_setfield(L, -4, "code");
      lua_setfield(L, -3, "error");
      lua_pop(L, 1);
      push_info(L, out[i], 0);
      triton_module_free(out[i]);
    }
    lua_setfield(L, -2, "info");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

static int l_available(lua_State *L) {
  kevo_error err = {0};
  triton_pool *pool = get_pool(L, &err);
  char version[32];
  if (!pool || triton_pool_ready(pool, version, sizeof version, &err)) {
    lua_pushnil(L);
    lua_pushstring(L, err.msg);
    return 2;
  }
  lua_pushboolean(L, 1);
  lua_pushstring(L, version);
  return 2;
}

static int l_configure(lua_State *L) {
  static const char *const keys[] = {"python",     "servers",   "timeout",   "start_timeout",
                                     "disk_cache", "keep_user", "allowlist", NULL};
  luaL_checktype(L, 1, LUA_TTABLE);
  kevo_l_checkopts(L, 1, "triton.configure", keys);
  const char *py = kevo_l_optstr(L, 1, "python", NULL);
  triton_pool_opts o = {0};
  o.servers = (int)kevo_l_optint(L, 1, "servers", 0);
  o.timeout_s = kevo_l_optnum(L, 1, "timeout", 0);
  o.start_timeout_s = kevo_l_optnum(L, 1, "start_timeout", 0);
  o.no_disk_cache = !kevo_l_optbool(L, 1, "disk_cache", 1);
  o.keep_user = kevo_l_optbool(L, 1, "keep_user", 0);
  o.no_allowlist = !kevo_l_optbool(L, 1, "allowlist", 1);
  if (o.servers < 0 || o.servers > 16)
    luaL_error(L, "triton.configure: servers must be from 0 (automatic) to 16");
  if (o.timeout_s < 0 || o.start_timeout_s < 0)
    luaL_error(L, "triton.configure: timeouts must not be negative");
  lpool *lp = get_lpool(L); /* all checked: now replace the configuration */
  triton_pool_free(lp->pool);
  lp->pool = NULL;
  lp->o = o;
  snprintf(lp->python, sizeof lp->python, "%s", py ? py : "");
  return 0;
}

static int l_stop(lua_State *L) {
  lpool *lp = get_lpool(L);
  triton_pool_free(lp->pool);
  lp->pool = NULL;
  return 0;
}

static int l_sandbox(lua_State *L) {
  kevo_error err = {0};
  triton_pool *pool = get_pool(L, &err);
  if (!pool) return kevo_l_fail_err(L, &err);
  const char *note;
  int abi = triton_pool_landlock(pool, &note);
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, abi);
  lua_setfield(L, -2, "landlock");
  lua_pushstring(L, note);
  lua_setfield(L, -2, "note");
  lua_pushstring(L, triton_pool_python(pool));
  lua_setfield(L, -2, "python");
  return 1;
}

static int l_selftest(lua_State *L) {
  static const char *const keys[] = {"write", NULL};
  kevo_l_checkopts(L, 1, "triton.selftest", keys);
  const char *path = kevo_l_optstr(L, 1, "write", NULL);
  kevo_error err = {0};
  triton_pool *pool = get_pool(L, &err);
  cJSON *reply = NULL;
  if (!pool || triton_pool_selftest(pool, path, &reply, &err)) return kevo_l_fail_err(L, &err);
  kevo_l_pushjson(L, reply);
  cJSON_Delete(reply);
  return 1;
}

int luaopen_kevo_triton(lua_State *L);
int luaopen_kevo_triton(lua_State *L) {
  static const luaL_Reg methods[] = {{"cubin", module_cubin}, {"close", module_gc}, {NULL, NULL}};
  kevo_l_newclass(L, MODULE_MT, methods, module_gc, module_tostring);
  static const luaL_Reg none[] = {{NULL, NULL}};
  kevo_l_newclass(L, POOL_MT, none, pool_gc, pool_tostring);
  static const luaL_Reg fns[] = {{"compile", l_compile},     {"compile_many", l_compile_many},
                                 {"available", l_available}, {"configure", l_configure},
                                 {"stop", l_stop},           {"sandbox", l_sandbox},
                                 {"selftest", l_selftest},   {NULL, NULL}};
  luaL_newlib(L, fns);
  return 1;
}
