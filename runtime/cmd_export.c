/* kevo export RUN DIR [--db PATH]: the best verified kernel of a run as files another project
 * can use without kevo. The work lives in lua/kevo/export.lua; this runs it in a trusted state
 * and gives it the one system call Lua lacks (mkdir). */
#include "luastate.h"
#include "registry.h"

#include <lauxlib.h>
#include <lua.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* mkdir(path) -> true | nil, message. An existing directory is fine; parents are not made. */
static int export_mkdir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  struct stat st;
  if (mkdir(path, 0777) == 0 || (errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))) {
    lua_pushboolean(L, 1);
    return 1;
  }
  int e = errno;
  lua_pushnil(L);
  lua_pushfstring(L, "cannot make directory %s: %s", path,
                  e == EEXIST ? "a file has that name" : strerror(e));
  return 2;
}

static int export_main(int argc, char **argv) {
  kevo_error err = {0};
  lua_State *L = kevo_lua_new(&(kevo_lua_opts){0}, &err);
  if (!L) {
    fprintf(stderr, "kevo export: %s\n", err.msg);
    return KEVO_EXIT_FAILED;
  }
  int rc = KEVO_EXIT_FAILED;
  lua_getglobal(L, "require");
  lua_pushliteral(L, "kevo.export");
  if (kevo_lua_pcall(L, 1, 1) != LUA_OK) {
    fprintf(stderr, "kevo export: %s\n", lua_tostring(L, -1));
    goto out;
  }
  lua_getfield(L, -1, "main"); /* stack: export main */
  lua_createtable(L, argc, 0);
  for (int i = 1; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i);
  }
  lua_createtable(L, 0, 1); /* stack: export main args sys */
  lua_pushcfunction(L, export_mkdir);
  lua_setfield(L, -2, "mkdir");
  if (kevo_lua_pcall(L, 2, 1) != LUA_OK) {
    fprintf(stderr, "kevo export: %s\n", lua_tostring(L, -1));
    goto out;
  }
  rc = (int)luaL_optinteger(L, -1, KEVO_EXIT_OK);
out:
  kevo_lua_close(L);
  return rc;
}

const struct kevo_command kevo_cmd_export = {
    "export", "write a run's best verified kernel as files usable without kevo",
    "usage: kevo export RUN|last DIR [--db PATH]\n\n"
    "Writes into DIR (made if missing): the kernel's source (kernel.cu or kernel.py), its cubin\n"
    "recompiled for the architecture it was measured on (kernel.cubin), the recipe's reference\n"
    "cubin, launch.json (tensors, shapes, launch plans, knobs), kernel_launch.h (C: load and\n"
    "launch with the CUDA driver API), torch_ext.py (PyTorch, through ctypes),\n"
    "make_test_vectors.py (inputs and reference outputs, made on a GPU), provenance.json and a\n"
    "README.md saying how to use each.\n\n"
    "Exit 0 written; 1 the run has no verified kernel, the archive is unreadable, or a file\n"
    "cannot be written; 2 bad usage, no archive, or no such run.\n",
    export_main, 0};
