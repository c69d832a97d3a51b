#include "registry.h"
#include "version.h"

#include <lua.h>
#include <nvrtc.h>
#include <sqlite3.h>
#include <stdio.h>

static int version_main(int argc, char **argv) {
  (void)argv;
  if (argc > 1) {
    fprintf(stderr, "kevo version: takes no arguments\n");
    return KEVO_EXIT_USAGE;
  }
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  printf("kevo %s (%s)\n%s, SQLite %s, NVRTC %d.%d\n", KEVO_VERSION, KEVO_GIT, LUA_RELEASE,
         sqlite3_libversion(), major, minor);
  return KEVO_EXIT_OK;
}

const struct kevo_command kevo_cmd_version = {
    "version", "print kevo's version and the versions of what it was built with",
    "usage: kevo version\n\nPrints kevo's version, its git commit, and the Lua, SQLite and NVRTC\n"
    "versions it runs with.\n",
    version_main, 0};
