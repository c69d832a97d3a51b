/* Sandbox escapes and budgets: each must fail cleanly with the host state still usable. */
#include "check.h"
#include "luastate.h"

#include <lauxlib.h>
#include <lua.h>

/* Runs code in a fresh sandbox; returns the Lua status and copies the error message. */
static int run_sandboxed(const char *code, char *msg, size_t msglen) {
  kevo_lua_opts o = {.sandbox = 1,
                     .mem_limit = 64u << 20,
                     .instr_limit = 50u * 1000 * 1000,
                     .time_limit_s = 10,
                     .seed = 42};
  kevo_error err = {0};
  lua_State *L = kevo_lua_new(&o, &err);
  if (!L) {
    snprintf(msg, msglen, "%s", err.msg);
    return -1;
  }
  int st = kevo_lua_load(L, code, strlen(code), "=test");
  if (st == LUA_OK) st = kevo_lua_pcall(L, 0, 1);
  snprintf(msg, msglen, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "");
  kevo_lua_close(L);
  return st;
}

static void expect_fail(const char *code, const char *needle) {
  char msg[4096];
  int st = run_sandboxed(code, msg, sizeof msg);
  CHECK(st != LUA_OK);
  CHECK_STR_CONTAINS(msg, needle);
}

static void expect_ok(const char *code, const char *want) {
  char msg[4096];
  int st = run_sandboxed(code, msg, sizeof msg);
  CHECK(st == LUA_OK);
  if (want) CHECK_STR_CONTAINS(msg, want);
}

int main(void) {
  expect_fail("os.execute('true')", "unknown global 'os'");
  expect_fail("return io.open('/etc/passwd')", "unknown global 'io'");
  expect_fail("return package.loaded", "unknown global 'package'");
  expect_fail("return debug.getinfo(1)", "unknown global 'debug'");
  expect_fail("x = 1", "undeclared global 'x'");
  expect_fail("return string.dump(function() end)", "dump");
  expect_fail("return ('').dump(print)", "dump");
  expect_fail("local f = assert(load('\\27Lua\\84\\0')) return f()", "binary chunks");
  expect_fail("return require 'io'", "not allowed");
  expect_fail("return require 'kevo.archive'", "not allowed in a sandbox");
  expect_fail("return require 'kevo.http'", "not allowed in a sandbox");
  expect_fail("return pcall(require, 'kevo.llm') and 'escaped' or error((select(2, pcall(require, "
              "'kevo.llm'))))",
              "not allowed in a sandbox");
  expect_fail("return load(\"return require 'kevo.http'\", '=[kevo]lua/kevo/x.lua')()",
              "not allowed in a sandbox");
  expect_fail("return dofile('/etc/passwd')", "unknown global 'dofile'");
  expect_fail("return setmetatable(_G, nil)", "protected metatable");
  /* budgets: an endless loop, the same under pcall, inside a coroutine, a 1 GB string */
  expect_fail("while true do end", "instruction budget spent");
  expect_fail("local ok = pcall(function() while true do end end) while true do end",
              "budget spent");
  expect_fail("for i = 1, 100 do pcall(function() while true do end end) end return 'swallowed'",
              "budget spent");
  expect_fail("local co = coroutine.wrap(function() while true do end end) return pcall(co)",
              "budget spent");
  expect_fail("return #string.rep('x', 1 << 30)", "not enough memory");
  expect_fail("local t = {} for i = 1, 1e9 do t[i] = i end", "");
  /* what a sandbox may do */
  expect_ok("return tostring(math.random(1, 1000000))", NULL);
  expect_ok("local kevo = require 'kevo' return kevo.version", "0.");
  expect_ok("local f = load('return 1 + 2') return tostring(f())", "3");
  expect_ok("local ok, e = pcall(error, 'x') return tostring(ok)", "false");

  /* same seed, same random sequence: a run can be replayed */
  char a[64], b[64];
  run_sandboxed("return tostring(math.random(1, 1 << 40))", a, sizeof a);
  run_sandboxed("return tostring(math.random(1, 1 << 40))", b, sizeof b);
  CHECK(strcmp(a, b) == 0);

  /* a trusted state has io and os and the kevo modules */
  kevo_error err = {0};
  lua_State *L = kevo_lua_new(&(kevo_lua_opts){0}, &err);
  CHECK(L != NULL);
  const char *code = "return type(io.open) .. type(os.time) .. require('kevo').version";
  CHECK(kevo_lua_load(L, code, strlen(code), "=t") == LUA_OK);
  CHECK(kevo_lua_pcall(L, 0, 1) == LUA_OK);
  CHECK_STR_CONTAINS(lua_tostring(L, -1), "functionfunction0.");
  kevo_lua_close(L);
  CHECK_DONE();
}
