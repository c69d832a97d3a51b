/* luastate.h: creating the Lua states kevo runs scripts in.
 *
 * A trusted state (`kevo script`) has the whole standard library plus the kevo modules.
 * A sandboxed state (strategies, launch chunks) has only base, string, table, math, utf8 and
 * coroutine plus the kevo modules: no io, os, package, debug, bytecode loading or string.dump;
 * unknown globals raise on read and write; memory is capped by the allocator; an instruction
 * and wall-time budget is enforced by a hook that, once spent, raises at every instruction so
 * no pcall can swallow it; math.random is seeded from opts->seed. */
#ifndef KEVO_LUASTATE_H
#define KEVO_LUASTATE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

typedef struct lua_State lua_State;

typedef struct kevo_lua_opts {
  int sandbox;          /* 0: trusted (kevo script); 1: sandboxed */
  size_t mem_limit;     /* bytes the state may allocate; 0: none */
  uint64_t instr_limit; /* VM instructions; 0: none */
  double time_limit_s;  /* wall seconds spent running Lua (not C calls); 0: none */
  uint64_t seed;        /* seeds math.random in a sandbox */
  /* A sandbox's require gives only these modules (NULL-terminated), whoever asks: the strategy
   * process's state, where no code is kevo's to trust. NULL: every kevo module, the privileged
   * ones to kevo's embedded code only. */
  const char *const *only_modules;
} kevo_lua_opts;

/* A new state, or NULL with err filled. Close with kevo_lua_close. */
lua_State *kevo_lua_new(const kevo_lua_opts *opts, kevo_error *err);
void kevo_lua_close(lua_State *L);

/* lua_pcall with a traceback handler. On error leaves the message (with traceback) on the
 * stack and returns the Lua status. */
int kevo_lua_pcall(lua_State *L, int nargs, int nresults);

/* Loads a text chunk (never bytecode) named `chunkname` with the state's globals.
 * Returns a Lua status; on error leaves the message on the stack. */
int kevo_lua_load(lua_State *L, const char *code, size_t len, const char *chunkname);

/* Nonzero once a sandbox budget (instructions or time) is spent: the state only raises now. */
int kevo_lua_budget_spent(lua_State *L);
/* Bytes the state holds now, and the most it held. */
size_t kevo_lua_mem_used(lua_State *L);

/* The resource text of an embedded Lua module ("kevo.llm" -> lua/kevo/llm.lua or
 * lua/kevo/llm/init.lua), or NULL. *path receives the resource path. */
const char *kevo_lua_find_embedded(const char *modname, size_t *len, const char **path);

#endif
