/* kevo.cuda: CUDA C to cubin with NVRTC, in process (runtime/cuda_compile.h).
 *   cuda.compile(src [, opts]) -> module, info
 *       | nil, "E_COMPILE: name:line:col: message", "E_COMPILE", info
 *       | nil, "E_TIMEOUT: ...", "E_TIMEOUT"   (and other expected failures)
 *     opts: arch = "sm_90", defines = {BLOCK = 256, USE_X = true} (false: left undefined),
 *           name = "softmax.cu", lineinfo = bool, timeout = seconds, cache = bool (default true)
 *   cuda.compile_many(list [, opts]) -> {{module=, info=, error=, code=}, ...}
 *     list items: a source string, or {source=, defines=, name=} (its defines replace opts')
 *   cuda.version() -> major, minor (NVRTC);  cuda.default_arch() -> "sm_90"
 *   cuda.check_arch(arch) -> true | nil, msg, "E_ARG" (the form, and NVRTC supports it)
 * info = {ok, diagnostics = {{line, col, severity, message}}, log, kernels = {{name, registers,
 *         shared_static, local_bytes, spill_stores, spill_loads}}, ms, cached, hash, arch}
 * Module (kevo.cuda.Module): m:cubin() -> string, m.hash, m.arch, m:info(), m:close();
 * `local m <close> = ...` works. Misuse (bad option key or type, bad define name) raises. */
#include "cuda_compile.h"
#include "lutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODULE_MT "kevo.cuda.Module"
enum { MAX_LUA_DEFINES = 64 };

typedef struct lmodule {
  cuda_module *m;
} lmodule;

/* A compile request read from Lua; its strings are anchored in the table at `anchor`. */
typedef struct lrequest {
  cuda_compile_opts o;
  kevo_define defs[MAX_LUA_DEFINES];
} lrequest;

static const char *const COMPILE_OPTS[] = {"arch",    "defines", "name", "lineinfo",
                                           "timeout", "cache",   NULL};
static const char *const ITEM_KEYS[] = {"source", "defines", "name", NULL};

/* Reads the defines table at idx into r; value strings are kept in the anchor table. */
static void read_defines(lua_State *L, int idx, int anchor, lrequest *r, const char *fname) {
  r->o.ndefines = 0;
  if (lua_isnoneornil(L, idx)) return;
  idx = lua_absindex(L, idx);
  if (!lua_istable(L, idx)) luaL_error(L, "%s: defines must be a table", fname);
  lua_pushnil(L);
  while (lua_next(L, idx)) { /* stack: key value */
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_error(L, "%s: define names must be strings, got %s", fname, luaL_typename(L, -2));
    const char *name = lua_tostring(L, -2);
    const char *value = NULL;
    switch (lua_type(L, -1)) {
    case LUA_TBOOLEAN:
      if (!lua_toboolean(L, -1)) {
        lua_pop(L, 1);
        continue;
      }
      break;
    case LUA_TNUMBER: {
      char num[64];
      if (lua_isinteger(L, -1))
        snprintf(num, sizeof num, "%lld", (long long)lua_tointeger(L, -1));
      else
        snprintf(num, sizeof num, "%.17g", (double)lua_tonumber(L, -1));
      value = lua_pushstring(L, num);
      lua_rawseti(L, anchor, (lua_Integer)lua_rawlen(L, anchor) + 1);
      break;
    }
    case LUA_TSTRING:
      value = lua_tostring(L, -1);
      break;
    default:
      luaL_error(L, "%s: define %s must be a number, string or boolean, got %s", fname, name,
                 luaL_typename(L, -1));
    }
    if (r->o.ndefines >= MAX_LUA_DEFINES)
      luaL_error(L, "%s: more than %d defines", fname, MAX_LUA_DEFINES);
    r->defs[r->o.ndefines].name = name; /* keys stay alive in the defines table */
    r->defs[r->o.ndefines].value = value;
    r->o.ndefines++;
    lua_pop(L, 1);
  }
  r->o.defines = r->defs;
}

/* Reads the shared options (at idx, already checked) into r. */
static void read_opts(lua_State *L, int idx, int anchor, lrequest *r, const char *fname) {
  r->o.arch = kevo_l_optstr(L, idx, "arch", NULL);
  r->o.name = kevo_l_optstr(L, idx, "name", NULL);
  r->o.lineinfo = kevo_l_optbool(L, idx, "lineinfo", 0);
  r->o.timeout_s = kevo_l_optnum(L, idx, "timeout", 0);
  r->o.no_cache = !kevo_l_optbool(L, idx, "cache", 1);
  if (r->o.timeout_s < 0) luaL_error(L, "%s: timeout must be >= 0", fname);
  if (!lua_isnoneornil(L, idx)) {
    lua_getfield(L, idx, "defines");
    read_defines(L, -1, anchor, r, fname);
    lua_pop(L, 1);
  }
}

static void push_info(lua_State *L, const cuda_module *m) {
  lua_createtable(L, 0, 10);
  lua_pushboolean(L, m->ok);
  lua_setfield(L, -2, "ok");
  lua_createtable(L, (int)m->ndiags, 0);
  for (size_t i = 0; i < m->ndiags; i++) {
    const cuda_diag *d = &m->diags[i];
    kevo_l_pushdiag(L, d->line, d->col, d->severity, d->message);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "diagnostics");
  lua_createtable(L, (int)m->nkernels, 0);
  for (size_t i = 0; i < m->nkernels; i++) {
    const cuda_kernel_info *k = &m->kernels[i];
    lua_createtable(L, 0, 6);
    lua_pushstring(L, k->name);
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, k->registers);
    lua_setfield(L, -2, "registers");
    lua_pushinteger(L, k->shared_static);
    lua_setfield(L, -2, "shared_static");
    lua_pushinteger(L, k->local_bytes);
    lua_setfield(L, -2, "local_bytes");
    lua_pushinteger(L, k->spill_stores);
    lua_setfield(L, -2, "spill_stores");
    lua_pushinteger(L, k->spill_loads);
    lua_setfield(L, -2, "spill_loads");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "kernels");
  lua_pushstring(L, m->log ? m->log : "");
  lua_setfield(L, -2, "log");
  lua_pushnumber(L, m->compile_ms);
  lua_setfield(L, -2, "ms");
  lua_pushboolean(L, m->cached != 0);
  lua_setfield(L, -2, "cached");
  lua_pushstring(L, m->hash);
  lua_setfield(L, -2, "hash");
  lua_pushstring(L, m->arch);
  lua_setfield(L, -2, "arch");
  lua_pushinteger(L, (lua_Integer)(m->cubin ? m->cubin_size : 0));
  lua_setfield(L, -2, "cubin_size");
}

/* Pushes the results of one compile; the module userdata `ud` (at udidx) takes m on success.
 * Returns the number of values: module, info | nil, msg, code[, info]. Raises on misuse. */
static int push_result(lua_State *L, int udidx, int rc, cuda_module *m, const kevo_error *err,
                       const char *fname) {
  if (rc == KEVO_E_ARG) {
    cuda_module_free(m);
    return luaL_error(L, "%s: %s", fname, err->msg);
  }
  if (rc == KEVO_OK) {
    lmodule *u = lua_touserdata(L, udidx);
    u->m = m;
    lua_pushvalue(L, udidx);
    push_info(L, m);
    return 2;
  }
  kevo_l_fail_err(L, err);
  if (!m) return 3;
  push_info(L, m);
  cuda_module_free(m);
  return 4;
}

static lmodule *new_lmodule(lua_State *L) {
  lmodule *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->m = NULL;
  luaL_setmetatable(L, MODULE_MT);
  return u;
}

static int l_compile(lua_State *L) {
  size_t len;
  const char *src = luaL_checklstring(L, 1, &len);
  kevo_l_checkopts(L, 2, "cuda.compile", COMPILE_OPTS);
  lua_settop(L, 2);
  lua_newtable(L); /* stack: src opts anchor */
  lrequest *r = lua_newuserdatauv(L, sizeof *r, 0);
  memset(r, 0, sizeof *r);
  read_opts(L, 2, 3, r, "cuda.compile");
  r->o.source = src;
  r->o.len = len;
  new_lmodule(L); /* stack: src opts anchor request module */
  cuda_module *m = NULL;
  kevo_error err = {0};
  int rc = len ? cuda_compile(&r->o, &m, &err) : kevo_fail(&err, KEVO_E_ARG, "empty source");
  return push_result(L, 5, rc, m, &err, "cuda.compile");
}

static int l_compile_many(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  kevo_l_checkopts(L, 2, "cuda.compile_many", COMPILE_OPTS);
  lua_settop(L, 2);
  size_t n = (size_t)lua_rawlen(L, 1);
  lua_newtable(L); /* stack: list opts anchor */
  lrequest *base = lua_newuserdatauv(L, sizeof *base, 0);
  memset(base, 0, sizeof *base);
  read_opts(L, 2, 3, base, "cuda.compile_many");
  /* one block: requests, their option structs, results */
  size_t bytes = n * (sizeof(lrequest) + sizeof(cuda_compile_opts) + sizeof(cuda_module *) +
                      sizeof(int) + sizeof(kevo_error));
  char *block = lua_newuserdatauv(L, bytes ? bytes : 1, 0); /* stack: ... base block */
  lrequest *rs = (lrequest *)block;
  cuda_compile_opts *opts = (cuda_compile_opts *)(rs + n);
  cuda_module **out = (cuda_module **)(opts + n);
  int *rcs = (int *)(out + n);
  kevo_error *errs = (kevo_error *)(rcs + n);
  for (size_t i = 0; i < n; i++) {
    rs[i] = *base;
    lua_rawgeti(L, 1, (lua_Integer)i + 1);
    lua_rawseti(L, 3, (lua_Integer)lua_rawlen(L, 3) + 1); /* anchored */
    lua_rawgeti(L, 3, (lua_Integer)lua_rawlen(L, 3));
    if (lua_type(L, -1) == LUA_TTABLE) {
      kevo_l_checkopts(L, -1, "cuda.compile_many item", ITEM_KEYS);
      lua_getfield(L, -1, "source");
      if (lua_type(L, -1) != LUA_TSTRING)
        luaL_error(L, "cuda.compile_many: item %d: source must be a string", (int)i + 1);
      rs[i].o.source = lua_tolstring(L, -1, &rs[i].o.len);
      lua_pop(L, 1);
      rs[i].o.name = kevo_l_optstr(L, -1, "name", base->o.name);
      if (lua_getfield(L, -1, "defines") != LUA_TNIL)
        read_defines(L, -1, 3, &rs[i], "cuda.compile_many");
      lua_pop(L, 1);
    } else if (lua_type(L, -1) == LUA_TSTRING) {
      rs[i].o.source = lua_tolstring(L, -1, &rs[i].o.len);
    } else {
      luaL_error(L, "cuda.compile_many: item %d must be a string or a table", (int)i + 1);
    }
    lua_pop(L, 1);
    if (rs[i].o.len == 0) luaL_error(L, "cuda.compile_many: item %d: empty source", (int)i + 1);
    rs[i].o.defines = rs[i].defs;
    opts[i] = rs[i].o;
  }
  cuda_compile_many(opts, n, out, rcs, errs);
  /* misuse raises, after the modules are freed */
  for (size_t i = 0; i < n; i++) {
    if (rcs[i] != KEVO_E_ARG) continue;
    char msg[sizeof errs[i].msg];
    snprintf(msg, sizeof msg, "%s", errs[i].msg);
    for (size_t k = 0; k < n; k++)
      cuda_module_free(out[k]);
    return luaL_error(L, "cuda.compile_many: item %d: %s", (int)i + 1, msg);
  }
  lua_createtable(L, (int)n, 0); /* stack: ... block results */
  int results = lua_gettop(L);
  for (size_t i = 0; i < n; i++) {
    lua_createtable(L, 0, 4);
    new_lmodule(L); /* stack: results item module */
    int nres = push_result(L, results + 2, rcs[i], out[i], &errs[i], "cuda.compile_many");
    out[i] = NULL;
    if (nres == 2) { /* stack: results item module module info */
      lua_setfield(L, results + 1, "info");
      lua_setfield(L, results + 1, "module");
    } else { /* stack: results item module nil msg code [info] */
      if (nres == 4) lua_setfield(L, results + 1, "info");
      lua_setfield(L, results + 1, "code");
      lua_setfield(L, results + 1, "error");
    }
    lua_settop(L, results + 1);
    lua_rawseti(L, results, (lua_Integer)i + 1);
  }
  return 1;
}

static int l_version(lua_State *L) {
  int major, minor;
  cuda_nvrtc_version(&major, &minor);
  lua_pushinteger(L, major);
  lua_pushinteger(L, minor);
  return 2;
}

/* check_arch(arch) -> true | nil, "E_ARG: arch 'sm_1': not supported ...", "E_ARG" */
static int l_check_arch(lua_State *L) {
  kevo_error err = {0};
  if (cuda_check_arch(luaL_checkstring(L, 1), &err)) return kevo_l_fail_err(L, &err);
  lua_pushboolean(L, 1);
  return 1;
}

static int l_default_arch(lua_State *L) {
  lua_pushstring(L, cuda_default_arch());
  return 1;
}

/* ---- Module ---------------------------------------------------------------------------- */

static cuda_module *check_open(lua_State *L, int idx) {
  lmodule *u = luaL_checkudata(L, idx, MODULE_MT);
  if (!u->m) luaL_error(L, "kevo.cuda.Module: the module is closed");
  return u->m;
}

static int m_gc(lua_State *L) {
  lmodule *u = luaL_checkudata(L, 1, MODULE_MT);
  cuda_module_free(u->m);
  u->m = NULL;
  return 0;
}

static int m_tostring(lua_State *L) {
  lmodule *u = luaL_checkudata(L, 1, MODULE_MT);
  if (!u->m)
    lua_pushliteral(L, "kevo.cuda.Module (closed)");
  else
    lua_pushfstring(L, "kevo.cuda.Module (%s, %d kernels, %d bytes, %s)", u->m->arch,
                    (int)u->m->nkernels, (int)u->m->cubin_size, u->m->hash);
  return 1;
}

static int m_cubin(lua_State *L) {
  cuda_module *m = check_open(L, 1);
  lua_pushlstring(L, (const char *)m->cubin, m->cubin_size);
  return 1;
}

static int m_info(lua_State *L) {
  push_info(L, check_open(L, 1));
  return 1;
}

/* __index: methods first, then the fields hash and arch. */
static int m_index(lua_State *L) {
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
  const char *k = lua_tostring(L, 2);
  if (k && strcmp(k, "hash") == 0) {
    lua_pushstring(L, check_open(L, 1)->hash);
    return 1;
  }
  if (k && strcmp(k, "arch") == 0) {
    lua_pushstring(L, check_open(L, 1)->arch);
    return 1;
  }
  return 0;
}

int luaopen_kevo_cuda(lua_State *L);
int luaopen_kevo_cuda(lua_State *L) {
  static const luaL_Reg methods[] = {
      {"cubin", m_cubin}, {"info", m_info}, {"close", m_gc}, {NULL, NULL}};
  static const luaL_Reg fns[] = {{"compile", l_compile},       {"compile_many", l_compile_many},
                                 {"version", l_version},       {"default_arch", l_default_arch},
                                 {"check_arch", l_check_arch}, {NULL, NULL}};
  kevo_l_newclass(L, MODULE_MT, methods, m_gc, m_tostring);
  luaL_getmetatable(L, MODULE_MT);
  lua_getfield(L, -1, "__index"); /* stack: mt methods */
  lua_pushcclosure(L, m_index, 1);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_newlib(L, fns);
  return 1;
}
