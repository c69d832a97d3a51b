/* kevo report RUN|last [--db PATH] [--html FILE] [--json]: what a run found. The views live in
 * lua/kevo/report.lua (policy); this runs them in a trusted state. */
#include "luastate.h"
#include "registry.h"

#include <lauxlib.h>
#include <lua.h>

#include <stdio.h>

/* Runs require(module).main(args) with argv[1..] as args; returns its exit code. Shared shape
 * with kevo export (cmd_export.c), which adds a mkdir function. */
static int report_main(int argc, char **argv) {
  kevo_error err = {0};
  lua_State *L = kevo_lua_new(&(kevo_lua_opts){0}, &err);
  if (!L) {
    fprintf(stderr, "kevo report: %s\n", err.msg);
    return KEVO_EXIT_FAILED;
  }
  int rc = KEVO_EXIT_FAILED;
  lua_getglobal(L, "require");
  lua_pushliteral(L, "kevo.report");
  if (kevo_lua_pcall(L, 1, 1) != LUA_OK) {
    fprintf(stderr, "kevo report: %s\n", lua_tostring(L, -1));
    goto out;
  }
  lua_getfield(L, -1, "main"); /* stack: report main */
  lua_createtable(L, argc, 0);
  for (int i = 1; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i);
  }
  if (kevo_lua_pcall(L, 1, 1) != LUA_OK) {
    fprintf(stderr, "kevo report: %s\n", lua_tostring(L, -1));
    goto out;
  }
  rc = (int)luaL_optinteger(L, -1, KEVO_EXIT_OK);
out:
  kevo_lua_close(L);
  return rc;
}

const struct kevo_command kevo_cmd_report = {
    "report", "summarize a run: the best kernel, progress, lineage (terminal, JSON or HTML)",
    "usage: kevo report RUN|last [--db PATH] [--html FILE] [--json]\n\n"
    "Prints what run RUN (an id, or last) found: recipe, strategy, status, duration,\n"
    "evaluations by verdict, LLM tokens and cost, and the best verified kernel (speed-up over\n"
    "the reference, median time, % of roofline, GB/s, where it was measured, its lineage).\n"
    "  --json       the same as one JSON object\n"
    "  --html FILE  also write one self-contained HTML page (no external resources): the best\n"
    "               kernel's source, progress charts over evaluations and over tokens, the\n"
    "               lineage tree, every candidate, the measurement fingerprints\n"
    "  --db PATH    the archive (default $KEVO_DB or ./kevo.db); it is only read\n\n"
    "Exit 0 done; 1 the archive is unreadable or FILE cannot be written; 2 bad usage, no\n"
    "archive, or no such run.\n",
    report_main, 0};
