/* kevo import FILE.py: a KernelBench-format problem as a recipe (docs/kbench.md). The policy
 * (naming, the contract, the YAML) is lua/kevo/kbench.lua; this runs it in a trusted state and
 * writes the files it plans. */
#include "luastate.h"
#include "registry.h"

#include <lauxlib.h>
#include <lua.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Writes every {path =, text =} of the plan's files after creating its dirs. stack: plan */
static int carry_out(lua_State *L) {
  lua_getfield(L, -1, "dirs");
  for (lua_Integer i = 1; lua_rawgeti(L, -1, i) == LUA_TSTRING; i++) {
    const char *d = lua_tostring(L, -1);
    if (mkdir(d, 0777) && errno != EEXIST) {
      fprintf(stderr, "kevo import: mkdir %s: %s\n", d, strerror(errno));
      return KEVO_EXIT_FAILED;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
  lua_getfield(L, -1, "files");
  for (lua_Integer i = 1; lua_rawgeti(L, -1, i) == LUA_TTABLE; i++) {
    lua_getfield(L, -1, "path");
    lua_getfield(L, -2, "text");
    size_t len;
    const char *path = lua_tostring(L, -2), *text = lua_tolstring(L, -1, &len);
    FILE *f = path && text ? fopen(path, "wb") : NULL;
    if (!f || fwrite(text, 1, len, f) != len || fclose(f)) {
      fprintf(stderr, "kevo import: writing %s: %s\n", path ? path : "?", strerror(errno));
      return KEVO_EXIT_FAILED;
    }
    lua_pop(L, 3);
  }
  lua_pop(L, 2);
  lua_getfield(L, -1, "message");
  fputs(luaL_optstring(L, -1, ""), stdout);
  lua_pop(L, 1);
  return KEVO_EXIT_OK;
}

static int import_main(int argc, char **argv) {
  kevo_error err = {0};
  lua_State *L = kevo_lua_new(&(kevo_lua_opts){0}, &err);
  if (!L) {
    fprintf(stderr, "kevo import: %s\n", err.msg);
    return KEVO_EXIT_FAILED;
  }
  int rc = KEVO_EXIT_FAILED;
  lua_getglobal(L, "require");
  lua_pushliteral(L, "kevo.kbench");
  if (kevo_lua_pcall(L, 1, 1) != LUA_OK) {
    fprintf(stderr, "kevo import: %s\n", lua_tostring(L, -1));
    goto out;
  }
  lua_getfield(L, -1, "main"); /* stack: kbench main */
  lua_createtable(L, argc, 0);
  for (int i = 1; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i);
  }
  if (kevo_lua_pcall(L, 1, 2) != LUA_OK) { /* stack: kbench code plan */
    fprintf(stderr, "kevo import: %s\n", lua_tostring(L, -1));
    goto out;
  }
  rc = (int)luaL_optinteger(L, -2, KEVO_EXIT_FAILED);
  if (rc == KEVO_EXIT_OK && lua_istable(L, -1)) rc = carry_out(L);
out:
  kevo_lua_close(L);
  return rc;
}

const struct kevo_command kevo_cmd_import = {
    "import", "turn a KernelBench-format PyTorch problem into a recipe",
    "usage: kevo import FILE.py [--out DIR] [--name NAME] [--description DESC.json] [--force]\n"
    "                   [--python PYTHON]\n\n"
    "FILE.py defines class Model(nn.Module), get_inputs() and get_init_inputs(). kevo runs the\n"
    "model once through its PyTorch bridge (python3 with torch: --python, $KEVO_TORCH_PYTHON or\n"
    "python3 on PATH) and writes DIR/NAME.yaml (DIR: ./recipes, NAME: the file's name) and\n"
    "DIR/NAME/ (problem.py, the reference; description.json; README.md, the candidate's\n"
    "contract). The forward's tensor arguments, then the model's parameters and buffers, are\n"
    "the candidate's inputs, in that order. --description uses a recorded description instead\n"
    "of running python. A degenerate problem (constant output, or one that ignores its inputs)\n"
    "is refused. Exit 0 written, 1 the bridge failed, 2 bad usage or a problem kevo refuses.\n",
    import_main, 0};
