/* registry.h: the generated tables of C Lua modules and CLI commands (cmake/registry.cmake). */
#ifndef KEVO_REGISTRY_H
#define KEVO_REGISTRY_H

typedef struct lua_State lua_State;

struct kevo_cmodule {
  const char *name; /* "kevo.cuda" */
  int (*open)(lua_State *L);
};

/* A CLI command: runtime/cmd_<name>.c defines `const struct kevo_command kevo_cmd_<name>`. */
struct kevo_command {
  const char *name;    /* "eval" */
  const char *summary; /* one line for `kevo --help` */
  const char *help;    /* full text for `kevo eval --help`, starting with the usage line */
  /* argv[0] is the command name. Returns the process exit code: 0 success, 1 the job failed,
   * 2 bad usage or bad input. */
  int (*main)(int argc, char **argv);
  int hidden; /* not listed in `kevo --help` (e.g. worker) */
};

extern const struct kevo_cmodule kevo_cmodules[];        /* ends with a NULL name */
extern const struct kevo_command *const kevo_commands[]; /* ends with NULL */

enum { KEVO_EXIT_OK = 0, KEVO_EXIT_FAILED = 1, KEVO_EXIT_USAGE = 2 };

#endif
