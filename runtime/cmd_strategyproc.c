/* kevo strategy-process HOSTPID SEED CPU_S MEM_BYTES: the process a strategy runs in (hidden;
 * started by the host, runtime/stratproc.c, never by a person).
 *
 * It confines itself first (confine.h: Landlock with no file access, rlimits, seccomp,
 * PR_SET_PDEATHSIG), before any Lua exists; then makes a sandboxed state whose require gives
 * only the modules a strategy may use, and runs lua/kevo/remote.lua, which loads the strategy
 * and forwards every ctx call to the host as a frame on fd 1, reading the reply on fd 0. */
#include "confine.h"
#include "luastate.h"
#include "lutil.h"
#include "proto.h"
#include "registry.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

enum { CHILD_FDS = 3, AS_ROOM = 2048 }; /* MiB of address space for kevo beside Lua's cap */
#define CHILD_INSTR_LIMIT 20000000000ULL

/* What a strategy may require. kevo.search and kevo.strategy are the process's own versions
 * (remote.lua installs them): the host's never load here. */
static const char *const child_modules[] = {
    "kevo",        "kevo.sys",    "kevo.json",     "kevo.rng",           "kevo.searchutil",
    "kevo.search", "kevo.remote", "kevo.strategy", "kevo.strategy_core", NULL};

/* One frame (proto.h) to the host in one writev where the pipe takes it whole: a ctx call is a
 * frame each way, so system calls are the boundary's cost. A host that is gone ends this
 * process (SIGPIPE, left at its default). */
static int link_send(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  if (len == 0 || len > KEVO_PROTO_MAX_HEADER) return luaL_error(L, "host link: message too long");
  unsigned char pre[4] = {(unsigned char)len, (unsigned char)(len >> 8), (unsigned char)(len >> 16),
                          (unsigned char)(len >> 24)};
  struct iovec iov[2] = {{pre, 4}, {(void *)text, len}};
  int at = 0;
  while (at < 2) {
    ssize_t w = writev(1, iov + at, 2 - at);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) _exit(3); /* the host is gone */
    size_t done = (size_t)w;
    while (at < 2 && done >= iov[at].iov_len)
      done -= iov[at++].iov_len;
    if (at < 2) {
      iov[at].iov_base = (char *)iov[at].iov_base + done;
      iov[at].iov_len -= done;
    }
  }
  return 0;
}

/* The next frame from the host on fd 0 (non-blocking): what the pipe holds, else a short spin
 * of non-blocking reads where the host allows one (the reply to a ctx call is usually that
 * close), else asleep in poll. */
static kevo_link_buf from_host;
static kevo_link_spin host_spin;

static int link_recv(lua_State *L) {
  char *text;
  size_t len;
  kevo_error err = {0};
  long long spin_end = -1; /* set when the pipe is first found empty */
  int slept = 0;
  for (;;) {
    if (kevo_link_take(&from_host, (size_t)KEVO_PROTO_MAX_HEADER, &text, &len, &err))
      _exit(3); /* the host said something broken: nothing to do but end */
    if (text) break;
    ssize_t r = kevo_link_fill(&from_host, 0);
    if (r > 0) continue;
    if (r == 0 || r == -2) _exit(3); /* the host is gone */
    if (spin_end < 0) spin_end = kevo_link_spin_until(&host_spin);
    if (spin_end > 0 && kevo_link_now_ns() < spin_end) continue; /* the reply may be close */
    if (spin_end > 0 && !slept) kevo_link_spun(&host_spin, 0);
    slept = 1;
    struct pollfd pf = {.fd = 0, .events = POLLIN};
    if (poll(&pf, 1, -1) < 0 && errno != EINTR) _exit(3);
  }
  if (spin_end > 0 && !slept) kevo_link_spun(&host_spin, kevo_link_now_ns() <= spin_end);
  lua_pushlstring(L, text, len);
  free(text);
  return 1;
}

/* link.spin(on): whether this process's waits for the host may spin (proto.h); the host says
 * with each reply, from the machine's idle CPUs (stratproc.c). */
static int link_spin(lua_State *L) {
  host_spin.allowed = lua_toboolean(L, 1);
  return 0;
}

/* Tells the host why this process cannot run the strategy, as the protocol's last message. */
static void send_fatal(const char *msg) {
  cJSON *h = cJSON_CreateObject();
  cJSON_AddStringToObject(h, "op", "fatal");
  char cut[4096];
  snprintf(cut, sizeof cut, "%s", msg); /* an error object may be huge: its start says enough */
  cJSON_AddStringToObject(h, "error", cut);
  char *text = cJSON_PrintUnformatted(h);
  kevo_error err = {0};
  if (text) kevo_frame_send_text(1, text, strlen(text), -1, &err);
  free(text);
  cJSON_Delete(h);
}

static int is_pipe(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
}

static int child_main(int argc, char **argv) {
  if (argc != 5 || !is_pipe(0) || !is_pipe(1)) {
    fprintf(stderr, "kevo strategy-process: kevo's own process for running a strategy; kevo run "
                    "starts it\n");
    return KEVO_EXIT_USAGE;
  }
  long host = strtol(argv[1], NULL, 10);
  prctl(PR_SET_PDEATHSIG, 9);
  fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK); /* link_recv polls it */
  if (getppid() != (pid_t)host) _exit(1); /* the host died before we could be tied to it */
  kevo_lua_opts lo = {.sandbox = 1,
                      .seed = strtoull(argv[2], NULL, 10),
                      .mem_limit = (size_t)strtoull(argv[4], NULL, 10),
                      .instr_limit = CHILD_INSTR_LIMIT,
                      .only_modules = child_modules};
  kevo_confine_opts co = {.cpu_s = (unsigned)strtoul(argv[3], NULL, 10),
                          .as_bytes = lo.mem_limit + ((size_t)AS_ROOM << 20),
                          .max_fds = CHILD_FDS};
  int abi = 0;
  char note[256] = "";
  kevo_error err = {0};
  if (kevo_confine(&co, &abi, note, sizeof note, &err)) {
    send_fatal(err.msg);
    _exit(1);
  }
  lua_State *L = kevo_lua_new(&lo, &err);
  if (!L) {
    send_fatal(err.msg);
    _exit(1);
  }
  int rc = 1;
  lua_getglobal(L, "require");
  lua_pushliteral(L, "kevo.remote");
  if (kevo_lua_pcall(L, 1, 1) == LUA_OK) {
    /* require "kevo.search" here is the process's own: the plain functions, no context */
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE); /* stack: remote loaded */
    lua_getfield(L, -2, "search");
    lua_setfield(L, -2, "kevo.search");
    lua_pop(L, 1);
    lua_getfield(L, -1, "main"); /* stack: remote main */
    lua_createtable(L, 0, 4);
    lua_pushcfunction(L, link_send);
    lua_setfield(L, -2, "send");
    lua_pushcfunction(L, link_recv);
    lua_setfield(L, -2, "recv");
    lua_pushcfunction(L, link_spin);
    lua_setfield(L, -2, "spin");
    lua_pushstring(L, note);
    lua_setfield(L, -2, "confined");
    lua_pushinteger(L, abi);
    lua_setfield(L, -2, "landlock");
    if (kevo_lua_pcall(L, 1, 1) == LUA_OK)
      rc = (int)lua_tointeger(L, -1);
    else
      send_fatal(lua_tostring(L, -1) ? lua_tostring(L, -1) : "the strategy process failed");
  } else {
    send_fatal(lua_tostring(L, -1) ? lua_tostring(L, -1) : "cannot load kevo.remote");
  }
  kevo_lua_close(L);
  fflush(stderr);
  _exit(rc); /* no atexit work (a sanitizer's leak check cannot read /proc here) */
}

const struct kevo_command kevo_cmd_strategyproc = {
    "strategy-process", "kevo's own process for running a strategy (internal)",
    "usage: kevo strategy-process HOSTPID SEED CPU_S MEM_BYTES\n\n"
    "The process a strategy runs in: kevo run and kevo replay start it, with pipes for its\n"
    "standard descriptors. It confines itself (no files, no network, no exec, rlimits) and then\n"
    "runs the strategy, forwarding every ctx call to the host. Not for people.\n",
    child_main, 1};
