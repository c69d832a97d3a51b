/* kevo.stratproc: the host's handle on a strategy process (runtime/stratproc.h). Privileged:
 * only kevo's own code (lua/kevo/boundary.lua) may require it.
 *
 *   local p = stratproc.start{seed =, cpu_s =, mem_bytes =}  -- or nil, msg, code
 *   p:send(text [, timeout_ms])   -> true | nil, msg, code   (E_TIMEOUT: the reply went unread)
 *   p:recv(timeout_ms)            -> text | nil, msg, code   (E_TIMEOUT, E_IO: it ended, E_PARSE)
 *   p:stderr()                    -> bytes it wrote on stderr since the last call, dropped count
 *   p:finish([grace_ms])          -> "exit 0" | "killed by signal 9 SIGKILL" ...: ends it (SIGKILL
 *                                    after grace_ms, default 0) and reaps it; also __gc/__close
 *   p:pid()
 *   p:spin_allowed()              -> whether a wait may spin now (stratproc.h): the host tells the
 *                                    process with each reply
 *   p:spin_stats()                -> kevo's waits for a message that found none yet, those that
 *                                    spun, those whose spin got it (bench/ctx_roundtrip.sh) */
#include "lutil.h"
#include "stratproc.h"

#include <stdlib.h>

#define PROC_MT "kevo.stratproc.Process"

static kevo_stratproc *check_proc(lua_State *L) {
  kevo_stratproc **pp = luaL_checkudata(L, 1, PROC_MT);
  if (!*pp) luaL_error(L, "strategy process: already finished");
  return *pp;
}

static int sp_start(lua_State *L) {
  static const char *const keys[] = {"seed", "cpu_s", "mem_bytes", NULL};
  luaL_checktype(L, 1, LUA_TTABLE);
  kevo_l_checkopts(L, 1, "stratproc.start", keys);
  kevo_stratproc_opts o = {
      .seed = (uint64_t)kevo_l_optint(L, 1, "seed", 1),
      .cpu_s = (unsigned)kevo_l_optint(L, 1, "cpu_s", 600),
      .mem_bytes = (size_t)kevo_l_optint(L, 1, "mem_bytes", (lua_Integer)1 << 30),
  };
  /* userdata before the process: a failed allocation leaves no orphan behind */
  kevo_stratproc **pp = lua_newuserdatauv(L, sizeof *pp, 0);
  *pp = NULL;
  luaL_setmetatable(L, PROC_MT);
  kevo_stratproc *p = malloc(sizeof *p);
  if (!p) return kevo_l_fail(L, KEVO_E_NOMEM, "no memory for the strategy process");
  kevo_error err = {0};
  if (kevo_stratproc_start(p, &o, &err)) {
    free(p);
    return kevo_l_fail_err(L, &err);
  }
  *pp = p;
  return 1;
}

static int sp_send(lua_State *L) {
  kevo_stratproc *p = check_proc(L);
  size_t len;
  const char *text = luaL_checklstring(L, 2, &len);
  int timeout = (int)luaL_optinteger(L, 3, 5000);
  kevo_error err = {0};
  if (kevo_stratproc_send(p, text, len, timeout, &err)) return kevo_l_fail_err(L, &err);
  lua_pushboolean(L, 1);
  return 1;
}

static int sp_recv(lua_State *L) {
  kevo_stratproc *p = check_proc(L);
  int timeout = (int)luaL_checkinteger(L, 2);
  char *text;
  size_t len;
  kevo_error err = {0};
  if (kevo_stratproc_recv(p, &text, &len, timeout, &err)) return kevo_l_fail_err(L, &err);
  lua_pushlstring(L, text, len);
  free(text);
  return 1;
}

static int sp_spin_allowed(lua_State *L) {
  lua_pushboolean(L, kevo_stratproc_spin_allowed(check_proc(L)));
  return 1;
}

static int sp_spin_stats(lua_State *L) {
  kevo_stratproc *p = check_proc(L);
  lua_pushinteger(L, p->spin.waits);
  lua_pushinteger(L, p->spin.spins);
  lua_pushinteger(L, p->spin.hits);
  return 3;
}

static int sp_stderr(lua_State *L) {
  kevo_stratproc *p = check_proc(L);
  if (p->errlen == 0 && p->errdropped == 0) { /* the common case, once per message: no copy */
    lua_pushliteral(L, "");
    lua_pushinteger(L, 0);
    return 2;
  }
  char *buf = malloc(KEVO_STRATPROC_ERR_CAP);
  if (!buf) return luaL_error(L, "no memory");
  size_t dropped = 0;
  size_t n = kevo_stratproc_take_stderr(p, buf, KEVO_STRATPROC_ERR_CAP, &dropped);
  lua_pushlstring(L, buf, n);
  free(buf);
  lua_pushinteger(L, (lua_Integer)dropped);
  return 2;
}

static int sp_pid(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)check_proc(L)->pid);
  return 1;
}

/* finish and __gc/__close: one idempotent end. */
static int sp_finish(lua_State *L) {
  kevo_stratproc **pp = luaL_checkudata(L, 1, PROC_MT);
  int grace = (int)luaL_optinteger(L, 2, 0);
  if (!*pp) {
    lua_pushliteral(L, "finished");
    return 1;
  }
  char how[128];
  kevo_stratproc_end(*pp, grace, how, sizeof how);
  free(*pp);
  *pp = NULL;
  lua_pushstring(L, how);
  return 1;
}

static int sp_gc(lua_State *L) {
  lua_settop(L, 1);
  lua_pushinteger(L, 0);
  sp_finish(L);
  return 0;
}

static int sp_tostring(lua_State *L) {
  kevo_stratproc **pp = luaL_checkudata(L, 1, PROC_MT);
  if (*pp)
    lua_pushfstring(L, "kevo.stratproc.Process (pid %d)", (int)(*pp)->pid);
  else
    lua_pushliteral(L, "kevo.stratproc.Process (finished)");
  return 1;
}

int luaopen_kevo_stratproc(lua_State *L);
int luaopen_kevo_stratproc(lua_State *L) {
  static const luaL_Reg methods[] = {{"send", sp_send},
                                     {"recv", sp_recv},
                                     {"stderr", sp_stderr},
                                     {"pid", sp_pid},
                                     {"finish", sp_finish},
                                     {"spin_allowed", sp_spin_allowed},
                                     {"spin_stats", sp_spin_stats},
                                     {NULL, NULL}};
  kevo_l_newclass(L, PROC_MT, methods, sp_gc, sp_tostring);
  static const luaL_Reg fns[] = {{"start", sp_start}, {NULL, NULL}};
  luaL_newlib(L, fns);
  return 1;
}
