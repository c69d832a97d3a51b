/* kevo replay RUN|last [--strategy FILE] [--step] [--db PATH]: re-runs a finished run offline from
 * its journal (docs/resume.md). The policy is lua/kevo/replay.lua; this file gives it a
 * sandboxed Lua state (the strategy runs there, as in kevo run) and a host table only it sees:
 * read_file (the strategy and recipe), getenv, wait (Enter between steps), tty. No evaluator,
 * no LLM, no network: nothing here can reach a GPU or an API. */
#include "buf.h"
#include "luastate.h"
#include "lutil.h"
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The same caps as kevo run's strategy state. */
enum { REPLAY_MEM_LIMIT = 1024 << 20 };
#define REPLAY_INSTR_LIMIT 20000000000ULL

static int host_getenv(lua_State *L) {
  lua_pushstring(L, getenv(luaL_checkstring(L, 1)));
  return 1;
}

/* wait(prompt) -> true, or false at the end of input: --step's pause between steps. */
static int host_wait(lua_State *L) {
  const char *prompt = luaL_optstring(L, 1, "");
  fputs(prompt, stderr);
  fflush(stderr);
  char line[256];
  lua_pushboolean(L, fgets(line, sizeof line, stdin) != NULL);
  return 1;
}

static int replay_main(int argc, char **argv) {
  kevo_lua_opts opts = {
      .sandbox = 1, .mem_limit = REPLAY_MEM_LIMIT, .instr_limit = REPLAY_INSTR_LIMIT};
  opts.seed = 1; /* replay.lua seeds math.random with the run's own seed */
  kevo_error err = {0};
  lua_State *L = kevo_lua_new(&opts, &err);
  if (!L) {
    fprintf(stderr, "kevo replay: %s\n", err.msg);
    return KEVO_EXIT_FAILED;
  }
  int rc = KEVO_EXIT_FAILED;
  lua_getglobal(L, "require");
  lua_pushliteral(L, "kevo.replay");
  if (kevo_lua_pcall(L, 1, 1) != LUA_OK) {
    fprintf(stderr, "kevo replay: %s\n", lua_tostring(L, -1));
    kevo_lua_close(L);
    return rc;
  }
  lua_getfield(L, -1, "main");
  lua_remove(L, -2);
  lua_createtable(L, argc, 0);
  for (int i = 1; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i);
  }
  static const luaL_Reg fns[] = {
      {"read_file", kevo_l_read_file}, {"getenv", host_getenv}, {"wait", host_wait}, {NULL, NULL}};
  luaL_newlib(L, fns);
  lua_pushboolean(L, isatty(STDIN_FILENO) && isatty(STDERR_FILENO));
  lua_setfield(L, -2, "tty");
  if (kevo_lua_pcall(L, 2, 1) != LUA_OK) {
    fprintf(stderr, "kevo replay: %s\n", lua_tostring(L, -1));
  } else {
    int isnum;
    int r = (int)lua_tointegerx(L, -1, &isnum);
    if (isnum) rc = r;
  }
  kevo_lua_close(L);
  return rc;
}

const struct kevo_command kevo_cmd_replay = {
    "replay", "re-run a finished run offline from its journal (no GPU, no API key)",
    "usage: kevo replay RUN|last [--strategy FILE] [--step] [--db PATH]\n\n"
    "Runs RUN's strategy again with the answers recorded in its journal: evaluation results,\n"
    "LLM proposals, clock stops. Nothing is evaluated, no model is asked, nothing is written:\n"
    "it needs no GPU and no API key. Each journal entry is printed as it is consumed.\n\n"
    "options:\n"
    "  --strategy FILE   a changed strategy to try against the recorded history: answers are\n"
    "                    used while its requests match; the first that does not is reported as\n"
    "                    the divergence point, and from there on a request is answered only\n"
    "                    where the journal holds the same one (the same candidate, the same\n"
    "                    LLM request), else it gets no answer (E_REPLAY)\n"
    "  --step            wait for Enter after each step (for teaching)\n"
    "  --db PATH         the archive (default $KEVO_DB or ./kevo.db)\n\n"
    "The summary gives the steps replayed, the divergence point if any, and the best kernel.\n"
    "exit: 0 the strategy asked exactly what the journal holds, 1 it diverged (or failed),\n"
    "2 bad usage (no such run, a run without a journal)\n",
    replay_main, 0};
