/* kevo run RECIPE [options]: the search. The policy (argument checks, the search context, the
 * progress line, the summary) is lua/kevo/run.lua; this file gives it a sandboxed Lua state and
 * the few privileged services it needs (read the strategy file, write the best kernel, draw the
 * progress line, notice Ctrl-C) in a table that only run.lua sees, never the strategy. */
#include "buf.h"
#include "cmd_run.h"
#include "luastate.h"
#include "lutil.h"
#include "registry.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Budgets of the strategy's state. Evaluations and LLM calls happen in C and cost nothing
 * here; these stop a strategy that loops without asking for work, or hoards memory. */
enum { RUN_MEM_LIMIT = 1024 << 20 };
#define RUN_INSTR_LIMIT 20000000000ULL

static volatile sig_atomic_t run_interrupted;

static void on_sigint(int sig) {
  (void)sig;
  run_interrupted = 1; /* SA_RESETHAND: a second Ctrl-C ends the process at once */
}

static int host_interrupted(lua_State *L) {
  lua_pushboolean(L, run_interrupted != 0);
  return 1;
}

/* mkdir -p of the directory part of path. */
static int make_parents(const char *path, kevo_error *err) {
  char dir[4096];
  if (strlen(path) >= sizeof dir) return kevo_fail(err, KEVO_E_ARG, "path too long: %s", path);
  strcpy(dir, path);
  char *slash = strrchr(dir, '/');
  if (!slash) return KEVO_OK;
  *slash = '\0';
  for (char *p = dir + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(dir, 0777) && errno != EEXIST)
      return kevo_fail(err, KEVO_E_IO, "cannot create %s: %s", dir, strerror(errno));
    *p = '/';
  }
  if (dir[0] && mkdir(dir, 0777) && errno != EEXIST)
    return kevo_fail(err, KEVO_E_IO, "cannot create %s: %s", dir, strerror(errno));
  return KEVO_OK;
}

static int host_write_file(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  size_t len;
  const char *text = luaL_checklstring(L, 2, &len);
  kevo_error err = {0};
  if (make_parents(path, &err)) return kevo_l_fail_err(L, &err);
  FILE *f = fopen(path, "wb");
  if (!f) {
    kevo_fail(&err, KEVO_E_IO, "cannot write %s: %s", path, strerror(errno));
    return kevo_l_fail_err(L, &err);
  }
  int bad = fwrite(text, 1, len, f) != len;
  bad |= fclose(f) != 0;
  if (bad) {
    kevo_fail(&err, KEVO_E_IO, "cannot write %s: %s", path, strerror(errno));
    return kevo_l_fail_err(L, &err);
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* progress(line): on a terminal, redraws one line in place; otherwise prints it. The line
 * carries a strategy's words (notes, knobs), so its terminal controls are escaped. */
static int host_progress(lua_State *L) {
  size_t len;
  const char *line = luaL_checklstring(L, 1, &len);
  kevo_buf b;
  kevo_buf_init(&b, 0);
  if (kevo_buf_put_printable(&b, line, len)) {
    kevo_buf_free(&b);
    return luaL_error(L, "progress: out of memory");
  }
  if (isatty(STDERR_FILENO))
    fprintf(stderr, "\r%s\033[K", b.data ? b.data : "");
  else
    fprintf(stderr, "%s\n", b.data ? b.data : "");
  fflush(stderr);
  kevo_buf_free(&b);
  return 0;
}

/* clear_progress(): clears the progress line (before a log line or the summary). */
static int host_clear_progress(lua_State *L) {
  if (isatty(STDERR_FILENO)) fputs("\r\033[K", stderr);
  return 0;
}

/* started(db, run): the run row exists; if the state breaks, kevo still marks it failed. */
static char started_db[4096];
static long long started_run;

static int host_started(lua_State *L) {
  snprintf(started_db, sizeof started_db, "%s", luaL_checkstring(L, 1));
  started_run = (long long)luaL_checkinteger(L, 2);
  return 0;
}

static int host_getenv(lua_State *L) {
  lua_pushstring(L, getenv(luaL_checkstring(L, 1)));
  return 1;
}

/* sleep(seconds): KEVO_MODEL_DELAY slows the model evaluator (tests that kill a run during an
 * evaluation). Interrupted by Ctrl-C. */
static int host_sleep(lua_State *L) {
  double s = luaL_checknumber(L, 1);
  if (s > 0) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
  }
  return 0;
}

/* die(): the KEVO_FAULT test hook: ends kevo at once, as kill -9 would. */
static int host_die(lua_State *L) {
  (void)L;
  fflush(NULL);
  raise(SIGKILL);
  return 0;
}

/* list_dir(path) -> {{name=, dir=bool}, ...} sorted by name, or nil, msg: a folder of problems
 * (kevo suite). Hidden entries are left out. */
static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int host_list_dir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  DIR *d = opendir(path);
  if (!d) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, strerror(errno));
    return 2;
  }
  char *names[4096];
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < 4096)
    if (e->d_name[0] != '.' && (names[n] = strdup(e->d_name))) n++;
  closedir(d);
  qsort(names, n, sizeof names[0], name_cmp);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    char full[8192];
    struct stat st;
    snprintf(full, sizeof full, "%s/%s", path, names[i]);
    lua_createtable(L, 0, 2);
    lua_pushstring(L, names[i]);
    lua_setfield(L, -2, "name");
    lua_pushboolean(L, stat(full, &st) == 0 && S_ISDIR(st.st_mode));
    lua_setfield(L, -2, "dir");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
    free(names[i]);
  }
  return 1;
}

/* import(problem.py, out_dir, name) -> exit code: `kevo import problem.py --out out_dir --name
 * name` in a trusted state of its own (kevo suite takes KernelBench problem files); out_dir and
 * its parents are made first. */
static int host_import(lua_State *L) {
  const char *file = luaL_checkstring(L, 1);
  const char *out = luaL_checkstring(L, 2);
  const char *name = luaL_checkstring(L, 3);
  char probe[4096];
  kevo_error err = {0};
  snprintf(probe, sizeof probe, "%s/%s", out, name);
  if (make_parents(probe, &err)) {
    fprintf(stderr, "kevo suite: %s\n", err.msg);
    lua_pushinteger(L, KEVO_EXIT_FAILED);
    return 1;
  }
  char *args[] = {"import", (char *)file, "--out", (char *)out, "--name", (char *)name, NULL};
  lua_pushinteger(L, kevo_l_run_main("import", "kevo.kbench", 6, args, NULL));
  return 1;
}

/* spawn({arg, ...}, log) -> pid | nil, msg: this kevo again with those arguments (kevo suite
 * --jobs: one problem each), stdin from /dev/null, stdout and stderr to the file log (its
 * parents made first), killed when this process dies (PR_SET_PDEATHSIG). */
static int host_spawn(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const char *log = luaL_checkstring(L, 2);
  lua_Integer n = luaL_len(L, 1);
  if (n < 1 || n > 62) return luaL_error(L, "spawn: 1 to 62 arguments");
  const char *argv[64] = {"kevo"};
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 1, i);
    argv[i] = luaL_checkstring(L, -1); /* the table keeps the string */
    lua_pop(L, 1);
  }
  argv[n + 1] = NULL;
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  kevo_error err = {0};
  if (len <= 0) {
    kevo_fail(&err, KEVO_E_IO, "spawn: where is kevo: %s", strerror(errno));
    return kevo_l_fail_err(L, &err);
  }
  exe[len] = '\0';
  if (make_parents(log, &err)) return kevo_l_fail_err(L, &err);
  int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    kevo_fail(&err, KEVO_E_IO, "spawn: %s: %s", log, strerror(errno));
    return kevo_l_fail_err(L, &err);
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(137);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, STDIN_FILENO);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    execv(exe, (char *const *)argv);
    _exit(127);
  }
  close(fd);
  if (pid < 0) {
    kevo_fail(&err, KEVO_E_IO, "spawn: fork: %s", strerror(errno));
    return kevo_l_fail_err(L, &err);
  }
  lua_pushinteger(L, pid);
  return 1;
}

/* reap(pid) -> exit code (128 + signal when killed), or nil while it runs. */
static int host_reap(lua_State *L) {
  pid_t pid = (pid_t)luaL_checkinteger(L, 1);
  int st = 0;
  pid_t r = waitpid(pid, &st, WNOHANG);
  if (r == 0) return 0;
  if (r < 0) return luaL_error(L, "reap: %d is not a child of this kevo", (int)pid);
  lua_pushinteger(L, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  return 1;
}

static int resolve_llm(lua_State *L, const char *flag);

/* resolve_llm(flag) -> JSON text | nil, msg: the LLM settings for PROVIDER:MODEL as --llm would
 * give them (kevo run --resume takes the run's own). */
static int host_resolve_llm(lua_State *L) {
  return resolve_llm(L, luaL_checkstring(L, 1));
}

static const char *find_flag(int argc, char **argv, const char *flag);
static void set_llm_config(lua_State *L, const char *flag);
static void set_gpus_config(lua_State *L);

static void push_host(lua_State *L, int argc, char **argv) {
  static const luaL_Reg fns[] = {{"interrupted", host_interrupted},
                                 {"read_file", kevo_l_read_file},
                                 {"write_file", host_write_file},
                                 {"progress", host_progress},
                                 {"clear_progress", host_clear_progress},
                                 {"getenv", host_getenv},
                                 {"started", host_started},
                                 {"sleep", host_sleep},
                                 {"die", host_die},
                                 {"resolve_llm", host_resolve_llm},
                                 {"list_dir", host_list_dir},
                                 {"import", host_import},
                                 {"spawn", host_spawn},
                                 {"reap", host_reap},
                                 {NULL, NULL}};
  luaL_newlib(L, fns);
  lua_pushboolean(L, isatty(STDERR_FILENO));
  lua_setfield(L, -2, "tty");
  set_llm_config(L, find_flag(argc, argv, "--llm"));
  set_gpus_config(L);
}

/* The value of option `flag` (the last one given), read before the state exists, or NULL. */
static const char *find_flag(int argc, char **argv, const char *flag) {
  const char *v = NULL;
  size_t n = strlen(flag);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], flag) && i + 1 < argc)
      v = argv[++i];
    else if (!strncmp(argv[i], flag, n) && argv[i][n] == '=')
      v = argv[i] + n + 1;
  }
  return v;
}

/* The --seed value: it seeds the sandbox's math.random. */
static int find_seed(int argc, char **argv, uint64_t *seed) {
  const char *v = find_flag(argc, argv, "--seed");
  if (!v) return 0;
  char *end;
  errno = 0;
  unsigned long long s = strtoull(v, &end, 10);
  if (errno || *end || !*v) return -1;
  *seed = s;
  return 0;
}

/* The LLM settings (kevo.conf < environment < --llm) resolved by kevo.config in a trusted state,
 * since the sandbox can read neither files nor the environment. Sets host.llm_config (JSON) or
 * host.llm_config_error on the table at the top of L. Keys are never in it: only their
 * variable's name. */
static const char LLM_CONFIG_CHUNK[] =
    "local flag = ...\n"
    "local cfg, msg = require('kevo.config').llm{dir = '.', flags = flag and {llm = flag} or nil}\n"
    "if not cfg then return nil, msg end\n"
    "return require('kevo.json').encode(cfg)\n";

/* Pushes the LLM settings for flag (or none) as JSON text, or nil and a message; returns 2. */
static int resolve_llm(lua_State *L, const char *flag) {
  kevo_error err = {0};
  kevo_lua_opts topts = {0};
  lua_State *T = kevo_lua_new(&topts, &err);
  if (!T) {
    lua_pushnil(L);
    lua_pushstring(L, err.msg);
    return 2;
  }
  if (kevo_lua_load(T, LLM_CONFIG_CHUNK, sizeof LLM_CONFIG_CHUNK - 1, "=llm config") == LUA_OK) {
    if (flag)
      lua_pushstring(T, flag);
    else
      lua_pushnil(T);
    if (kevo_lua_pcall(T, 1, 2) == LUA_OK) {
      if (lua_isstring(T, -2)) {
        lua_pushstring(L, lua_tostring(T, -2));
        lua_pushnil(L);
      } else {
        lua_pushnil(L);
        lua_pushstring(L, lua_isstring(T, -1) ? lua_tostring(T, -1) : "bad LLM settings");
      }
      kevo_lua_close(T);
      return 2;
    }
  }
  lua_pushnil(L);
  lua_pushstring(L, lua_tostring(T, -1));
  kevo_lua_close(T);
  return 2;
}

static void set_llm_config(lua_State *L, const char *flag) {
  resolve_llm(L, flag); /* stack: host json|nil msg|nil */
  lua_setfield(L, -3, "llm_config_error");
  lua_setfield(L, -2, "llm_config");
}

/* kevo.conf's `gpus` (kevo.config.gpus, read in a trusted state as the LLM settings are): sets
 * host.gpus_config (text) or host.gpus_config_error on the table at the top of L. */
static const char GPUS_CONFIG_CHUNK[] = "local v, msg = require('kevo.config').gpus{dir = '.'}\n"
                                        "if msg then return nil, msg end\n"
                                        "return v\n";

static void set_gpus_config(lua_State *L) {
  kevo_error err = {0};
  kevo_lua_opts topts = {0};
  lua_State *T = kevo_lua_new(&topts, &err);
  if (!T) return;
  if (kevo_lua_load(T, GPUS_CONFIG_CHUNK, sizeof GPUS_CONFIG_CHUNK - 1, "=gpus config") == LUA_OK &&
      kevo_lua_pcall(T, 0, 2) == LUA_OK) {
    if (lua_isstring(T, -2)) {
      lua_pushstring(L, lua_tostring(T, -2));
      lua_setfield(L, -2, "gpus_config");
    } else if (lua_isstring(T, -1)) {
      lua_pushstring(L, lua_tostring(T, -1));
      lua_setfield(L, -2, "gpus_config_error");
    }
  } else {
    lua_pushstring(L, lua_tostring(T, -1));
    lua_setfield(L, -2, "gpus_config_error");
  }
  kevo_lua_close(T);
}

/* Runs require(module)[fn](args..., host) in L; returns the exit code it gave, or -1 with
 * the error printed. */
static int call_module(lua_State *L, const char *module, const char *fn, int argc, char **argv) {
  lua_getglobal(L, "require");
  lua_pushstring(L, module);
  if (kevo_lua_pcall(L, 1, 1) != LUA_OK) {
    fprintf(stderr, "kevo: %s\n", lua_tostring(L, -1));
    return -1;
  }
  lua_getfield(L, -1, fn); /* stack: run fn */
  lua_remove(L, -2);
  lua_createtable(L, argc, 0);
  for (int i = 1; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i);
  }
  push_host(L, argc, argv);
  if (kevo_lua_pcall(L, 2, 1) != LUA_OK) {
    host_clear_progress(L);
    fprintf(stderr, "kevo %s: %s\n", argv[0], lua_tostring(L, -1));
    return -1;
  }
  int isnum;
  int rc = (int)lua_tointegerx(L, -1, &isnum);
  return isnum ? rc : KEVO_EXIT_FAILED;
}

static int call_run(lua_State *L, const char *fn, int argc, char **argv) {
  return call_module(L, "kevo.run", fn, argc, argv);
}

int kevo_run_host_main(const char *module, uint64_t instr_limit, int argc, char **argv) {
  kevo_lua_opts opts = {.sandbox = 1, .mem_limit = RUN_MEM_LIMIT, .instr_limit = instr_limit};
  opts.seed = 1;
  if (find_seed(argc, argv, &opts.seed)) {
    fprintf(stderr, "kevo %s: --seed takes a non-negative integer\n", argv[0]);
    return KEVO_EXIT_USAGE;
  }
  kevo_error err = {0};
  lua_State *L = kevo_lua_new(&opts, &err);
  if (!L) {
    fprintf(stderr, "kevo %s: %s\n", argv[0], err.msg);
    return KEVO_EXIT_FAILED;
  }
  struct sigaction sa = {0}, old_int;
  sa.sa_handler = on_sigint;
  sa.sa_flags = SA_RESETHAND | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  int rc = call_module(L, module, "main", argc, argv);
  if (rc < 0) {
    /* The state broke (a budget spent, out of memory): finish the run row from a fresh one. */
    rc = KEVO_EXIT_FAILED;
    kevo_lua_close(L);
    L = NULL;
    if (started_db[0] && started_run > 0) {
      kevo_lua_opts fresh = {.sandbox = 1};
      lua_State *F = kevo_lua_new(&fresh, &err);
      if (F) {
        char runid[32];
        snprintf(runid, sizeof runid, "%lld", (long long)started_run);
        char *args[] = {"run", started_db, runid, NULL};
        call_run(F, "abandon", 3, args);
        kevo_lua_close(F);
      }
    }
  }
  sigaction(SIGINT, &old_int, NULL);
  kevo_lua_close(L);
  return rc;
}

static int run_main(int argc, char **argv) {
  return kevo_run_host_main("kevo.run", RUN_INSTR_LIMIT, argc, argv);
}

const struct kevo_command kevo_cmd_run = {
    "run", "search for a fast kernel for a recipe (the main job)",
    "usage: kevo run RECIPE [options]\n"
    "       kevo run --resume RUN [--max-evals N] [--time D] [--budget-tokens N] [--db P]\n\n"
    "Searches for a fast kernel for RECIPE (a recipe file, or the name of a packaged recipe):\n"
    "proposes candidates, compiles, verifies and times each one, and keeps the best.\n\n"
    "options:\n"
    "  --strategy NAME|FILE   autotune (default without an LLM), greedy, beam, uct, evolve,\n"
    "                         ./strategies/NAME.lua (in the place of a built-in of that name),\n"
    "                         a Lua file of your own, or a composition: beam+autotune\n"
    "  --llm PROVIDER:MODEL   the language model that writes candidates (none: tune knobs)\n"
    "  --budget-tokens N      stop asking the model after N tokens\n"
    "  --max-evals N          stop after N evaluations\n"
    "  --time DURATION        stop after DURATION (90s, 20m, 1h30m)\n"
    "  --set KEY=VALUE        a strategy option (beam.width=4 for one part of a composition)\n"
    "  --seed N               the run's seed: the same seed and results give the same run (1)\n"
    "  --db PATH              the archive (default $KEVO_DB or ./kevo.db)\n"
    "  --arch sm_XX           compile for this GPU architecture (default: the GPU's, or sm_90)\n"
    "  --gpus all|0,2,3       one worker per GPU, each batch spread over them (default: one\n"
    "                         worker; or `gpus =` in kevo.conf); GPUs of two models are\n"
    "                         refused. May change on --resume: results do not depend on it\n"
    "  --eval redis://HOST:PORT/DB  evaluate on GPU hosts through Redis instead: `kevo worker\n"
    "                         --redis` there, one per GPU (docs/redis.md); compiles here, for\n"
    "                         --arch. May change on --resume, like --gpus\n"
    "  --eval-password-env VAR  the environment variable holding the Redis password\n"
    "  --out DIR              where the best kernel is written (default kevo-out/<run>/)\n"
    "  --resume RUN           go on with a run that was killed: its journal is read back (no\n"
    "                         evaluation redone, no LLM call paid twice), then it runs live;\n"
    "                         recipe, strategy, options, seed and LLM are the run's own, and\n"
    "                         --max-evals, --time, --budget-tokens may extend its budgets.\n"
    "                         A strategy that no longer asks what the journal holds is\n"
    "                         reported (exit 1) and the run left as it was. docs/resume.md\n\n"
    "A progress line on stderr shows evaluations, the best speed-up over the reference, its\n"
    "% of roofline, tokens spent and elapsed time. Ctrl-C stops cleanly: the run is marked\n"
    "killed and everything found is kept (a second Ctrl-C ends kevo at once).\n\n"
    "Strategies run in a process of their own, confined: no files, no network, no exec, no\n"
    "environment (docs/strategies.md, Security). KEVO_EVALUATOR=model:FILE replaces the GPU with "
    "a\n"
    "synthetic cost model (a Lua file; examples/cost_model.lua): for teaching and tests only.\n\n"
    "exit: 0 a verified kernel was found, 1 none was or the run failed (what it found is kept),\n"
    "2 bad usage or input\n",
    run_main, 0};
