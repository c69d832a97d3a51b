/* kevo doctor: what this machine has for kevo, and what to do about what is missing.
 * The checks live in lua/kevo/doctor.lua (policy); this runs them in a trusted state. */
#include "luastate.h"
#include "registry.h"

#include <lauxlib.h>
#include <lua.h>

#include <stdio.h>
#include <string.h>

static int doctor_main(int argc, char **argv) {
  int json = 0, probe_llm = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (!strcmp(argv[i], "--offline"))
      probe_llm = 0;
    else {
      fprintf(stderr, "kevo doctor: unknown argument '%s' (see kevo doctor --help)\n", argv[i]);
      return KEVO_EXIT_USAGE;
    }
  }
  kevo_error err = {0};
  lua_State *L = kevo_lua_new(&(kevo_lua_opts){0}, &err);
  if (!L) {
    fprintf(stderr, "kevo doctor: %s\n", err.msg);
    return KEVO_EXIT_FAILED;
  }
  int rc = KEVO_EXIT_FAILED;
  lua_getglobal(L, "require");
  lua_pushliteral(L, "kevo.doctor");
  if (kevo_lua_pcall(L, 1, 1) != LUA_OK) {
    fprintf(stderr, "kevo doctor: %s\n", lua_tostring(L, -1));
    goto out;
  }
  lua_getfield(L, -1, "main"); /* stack: doctor main */
  lua_createtable(L, 0, 2);
  lua_pushboolean(L, json);
  lua_setfield(L, -2, "json");
  lua_pushboolean(L, probe_llm);
  lua_setfield(L, -2, "probe_llm");
  if (kevo_lua_pcall(L, 1, 1) != LUA_OK) {
    fprintf(stderr, "kevo doctor: %s\n", lua_tostring(L, -1));
    goto out;
  }
  rc = (int)luaL_optinteger(L, -1, KEVO_EXIT_OK);
out:
  kevo_lua_close(L);
  return rc;
}

const struct kevo_command kevo_cmd_doctor = {
    "doctor", "say what this machine has for kevo (GPU, NVRTC, Triton, LLM) and what to do",
    "usage: kevo doctor [--json] [--offline]\n\n"
    "Checks what kevo can use here and prints one line per item with what to do if it is\n"
    "missing: the CUDA driver and GPU, NVRTC, the archive, python3 and Triton, the LLM\n"
    "configuration (and, unless --offline, whether the LLM endpoint answers).\n"
    "Exit 0 when kevo can run a search here (a GPU and NVRTC), 1 otherwise.\n",
    doctor_main, 0};
