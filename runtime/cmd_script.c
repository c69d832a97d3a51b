/* kevo script FILE.lua [ARGS...]: runs a trusted Lua script with the kevo modules. */
#include "buf.h"
#include "luastate.h"
#include "registry.h"

#include <lauxlib.h>
#include <lua.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A script is a regular file or, as lua takes it, a pipe (`kevo script <(printf ...)`). */
static int read_script(const char *path, kevo_buf *src, kevo_error *err) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISFIFO(st.st_mode)) return kevo_read_file(path, src, err);
  FILE *f = fopen(path, "rb");
  if (!f) return kevo_fail(err, KEVO_E_IO, "%s: %s", path, strerror(errno));
  int rc = kevo_read_stream(f, path, src, err);
  fclose(f);
  return rc;
}

static int script_main(int argc, char **argv) {
  /* --llm PROVIDER:MODEL before the file: the model kevo.llm uses, as $KEVO_LLM would name it */
  if (argc >= 2 && !strncmp(argv[1], "--llm", 5)) {
    const char *spec = argv[1][5] == '='             ? argv[1] + 6
                       : argv[1][5] == 0 && argc > 2 ? argv[2]
                                                     : NULL;
    if (!spec || !strchr(spec, ':')) {
      fprintf(stderr, "kevo script: --llm takes PROVIDER:MODEL (see kevo script --help)\n");
      return KEVO_EXIT_USAGE;
    }
    setenv("KEVO_LLM", spec, 1);
    int used = argv[1][5] == '=' ? 1 : 2;
    argc -= used;
    argv += used;
  }
  if (argc < 2) {
    fprintf(stderr, "usage: kevo script [--llm PROVIDER:MODEL] FILE.lua [ARGS...] (see kevo "
                    "script --help)\n");
    return KEVO_EXIT_USAGE;
  }
  const char *path = argv[1];
  kevo_error err = {0};
  kevo_buf src;
  kevo_buf_init(&src, 0);
  if (read_script(path, &src, &err)) {
    fprintf(stderr, "kevo script: %s\n", err.msg);
    kevo_buf_free(&src);
    return KEVO_EXIT_USAGE;
  }
  kevo_lua_opts opts = {0};
  lua_State *L = kevo_lua_new(&opts, &err);
  if (!L) {
    kevo_buf_free(&src);
    fprintf(stderr, "kevo script: %s\n", err.msg);
    return KEVO_EXIT_FAILED;
  }
  /* arg table as lua.c makes it: arg[0] the script, arg[1..] its arguments */
  lua_createtable(L, argc, 0);
  for (int i = 1; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - 1);
  }
  lua_setglobal(L, "arg");

  char chunk[4096];
  snprintf(chunk, sizeof chunk, "@%s", path);
  const char *code = src.data;
  size_t len = src.len;
  if (len > 0 && code[0] == '#') { /* skip a shebang line */
    const char *nl = memchr(code, '\n', len);
    size_t skip = nl ? (size_t)(nl - code) : len;
    code += skip;
    len -= skip;
  }
  int rc = KEVO_EXIT_OK;
  if (kevo_lua_load(L, code, len, chunk) != LUA_OK) {
    fprintf(stderr, "kevo script: %s\n", lua_tostring(L, -1));
    rc = KEVO_EXIT_USAGE;
  } else {
    for (int i = 2; i < argc; i++)
      lua_pushstring(L, argv[i]);
    if (kevo_lua_pcall(L, argc - 2, 1) != LUA_OK) {
      fprintf(stderr, "kevo script: %s\n", lua_tostring(L, -1));
      rc = KEVO_EXIT_FAILED;
    } else if (lua_isinteger(L, -1)) {
      rc = (int)lua_tointeger(L, -1); /* a script may return its exit code */
    } else if (lua_type(L, -1) == LUA_TBOOLEAN && !lua_toboolean(L, -1)) {
      rc = KEVO_EXIT_FAILED;
    }
  }
  kevo_lua_close(L);
  kevo_buf_free(&src);
  return rc;
}

const struct kevo_command kevo_cmd_script = {
    "script", "run a Lua script with the kevo modules (prototyping, teaching, tests)",
    "usage: kevo script [--llm PROVIDER:MODEL] FILE.lua [ARGS...]\n\n"
    "Runs FILE.lua in a trusted Lua 5.4 state: the whole standard library (io, os included)\n"
    "plus kevo's modules through require, e.g.\n\n"
    "  local kevo = require \"kevo\"\n  local cuda = require \"kevo.cuda\"\n\n"
    "The script sees its arguments in `arg` (arg[0] is the script) and as `...`.\n"
    "It may return an integer exit code, or false for exit 1. An uncaught error prints\n"
    "a traceback and exits 1. Strategies loaded by `kevo run` are sandboxed; scripts are not.\n\n"
    "  --llm PROVIDER:MODEL   the language model kevo.llm uses in the script (as $KEVO_LLM:\n"
    "                         over kevo.conf's llm =), e.g. for examples/llm_chat.lua\n",
    script_main, 0};
