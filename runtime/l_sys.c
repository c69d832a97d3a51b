/* kevo.sys: the few system services a sandboxed script may use: a log line on stderr, a
 * monotonic clock, the build's version, and printable(text) (runtime/buf.h
 * kevo_buf_put_printable: terminal controls made visible). */
#include "buf.h"
#include "lutil.h"
#include "version.h"

#include <stdio.h>
#include <time.h>

/* printable(text) -> text with the bytes a terminal would act on escaped. */
static int sys_printable(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  kevo_buf b;
  kevo_buf_init(&b, 0);
  if (kevo_buf_put_printable(&b, s, len)) {
    kevo_buf_free(&b);
    return luaL_error(L, "printable: out of memory");
  }
  lua_pushlstring(L, b.data ? b.data : "", b.len);
  kevo_buf_free(&b);
  return 1;
}

/* log(line): the line on stderr, terminal controls escaped (a strategy's words reach it). */
static int sys_log(lua_State *L) {
  sys_printable(L);
  size_t len;
  const char *s = lua_tolstring(L, -1, &len);
  fwrite(s, 1, len, stderr);
  fputc('\n', stderr);
  return 0;
}

/* Seconds on the monotonic clock (for elapsed-time displays; not for timing kernels). */
static int sys_clock(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec + ts.tv_nsec * 1e-9);
  return 1;
}

int luaopen_kevo_sys(lua_State *L);
int luaopen_kevo_sys(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"log", sys_log}, {"clock", sys_clock}, {"printable", sys_printable}, {NULL, NULL}};
  luaL_newlib(L, fns);
  lua_pushstring(L, KEVO_VERSION);
  lua_setfield(L, -2, "version");
  lua_pushstring(L, KEVO_GIT);
  lua_setfield(L, -2, "commit");
  return 1;
}
