/* triton.h: compiling Triton candidates in a sandboxed, long-lived Python compile server.
 * Knows nothing of Lua.
 *
 * A pool holds up to `servers` python processes running the embedded python/triton_server.py.
 * Each is started once per run (the cold start of importing Triton is paid once, not once per
 * candidate), with a scrubbed environment, resource limits, its own private temporary directory
 * as cwd, HOME, TMPDIR and TRITON_CACHE_DIR, and, where the kernel has Landlock, no right to
 * write anywhere else (nor to open TCP connections). Requests and replies are kevo frames
 * (proto.h) over two pipes. A compile that passes its deadline kills the server (and its
 * ptxas); a server that dies is started afresh for the next compile. Results are cached by
 * content hash in memory and on disk ($KEVO_CACHE, else $XDG_CACHE_HOME/kevo, else
 * ~/.cache/kevo; subdirectory triton/).
 *
 * Works without a GPU: the target is given ("sm_90"). See docs/triton.md for the calling
 * convention of the cubins and the specialisation policy. */
#ifndef KEVO_TRITON_H
#define KEVO_TRITON_H

#include <stddef.h>
#include <stdint.h>

#include "sha256.h"
#include "status.h"

typedef struct cJSON cJSON;

typedef struct triton_pool_opts {
  const char *python;     /* interpreter; NULL: $KEVO_PYTHON, the venv, python3 on PATH */
  int servers;            /* most servers at once; 0: $KEVO_TRITON_SERVERS or min(CPUs, 4) */
  double timeout_s;       /* default per-compile deadline; 0: 120 */
  double start_timeout_s; /* deadline for a server to import Triton and warm up; 0: 180 */
  const char *arch;       /* architecture the warm-up compile targets; NULL: sm_90 */
  int no_disk_cache;      /* 1: memory cache only */
  int keep_user;          /* 1: as root, do not become nobody (tests of the other walls only) */
  int no_allowlist;       /* 1: no allow-list, the OS wall alone (tests of that wall only) */
  int prefault;           /* compile processes warm up before their request: 0 auto (at least
                             4 CPUs, and twice the servers), 1 on, -1 off;
                             $KEVO_TRITON_PREFAULT=1|0 overrides */
} triton_pool_opts;

typedef struct triton_pool triton_pool;

/* A pool with no server started yet (servers start on first use). Ignores SIGPIPE for the
 * process if it was at its default (a server that dies must not kill kevo on the next write). */
int triton_pool_new(const triton_pool_opts *opts, triton_pool **out, kevo_error *err);
/* Stops every server (they also die with kevo: PR_SET_PDEATHSIG) and removes the temp dir. */
void triton_pool_free(triton_pool *p);

/* Starts one server if none runs and waits for its hello. KEVO_OK with Triton's version in
 * version, or KEVO_E_UNSUPPORTED (no python, no Triton) / KEVO_E_TIMEOUT with the reason. */
int triton_pool_ready(triton_pool *p, char *version, size_t version_len, kevo_error *err);

/* The sandbox as it is applied: Landlock ABI (0: none) and a note a person can read. */
int triton_pool_landlock(const triton_pool *p, const char **note);
/* The interpreter the pool uses, as resolved. */
const char *triton_pool_python(const triton_pool *p);

/* Asks a server to report on its own sandbox: its environment's variable names, its pid, and
 * what happens when it tries to create the file `write_path` (NULL: no attempt). *reply is the
 * server's JSON reply (the caller deletes it). For tests and `kevo` diagnostics. */
int triton_pool_selftest(triton_pool *p, const char *write_path, cJSON **reply, kevo_error *err);

typedef struct triton_compile_opts {
  const char *source;
  size_t len;
  const char *filename;    /* for diagnostics; NULL: "candidate.py" */
  const char *kernel;      /* the @triton.jit function to compile */
  const cJSON *signature;  /* {"x_ptr": "*fp32", "n": "i32"} or ["*fp32", "i32"] (positional
                              over the non-constexpr parameters) */
  const cJSON *constexprs; /* {"BLOCK": 1024}; NULL: none (defaults of the kernel apply) */
  int num_warps;           /* 0: 4 */
  int num_stages;          /* 0: 3 */
  const char *arch;        /* "sm_90"; NULL: $KEVO_ARCH or sm_90 */
  double timeout_s;        /* 0: the pool's */
  double deadline_s;       /* CLOCK_MONOTONIC seconds (kevo.clock's) by which the compile must
                              end, whatever timeout_s says (a run's --time): the server is given
                              what is left as the compile's timeout, and is killed if it has not
                              answered DEADLINE_GRACE_S past it; a compile not yet sent then
                              fails at once with KEVO_E_TIMEOUT ("not started"). 0: none */
} triton_compile_opts;

typedef struct triton_diag {
  int line, col;     /* in the candidate's source, 1-based; 0 when unknown */
  char severity[16]; /* "error" */
  char *message;
} triton_diag;

/* A parameter the calling convention appends after the kernel's own (Triton 3.x: the global
 * and the profile scratch pointers). When bytes_per_program > 0 the launcher must pass a buffer
 * of bytes_per_program * (grid x*y*z) * num_ctas bytes aligned to `align`; otherwise null. */
typedef struct triton_extra_arg {
  char name[32];
  int64_t bytes_per_program;
  int64_t align;
} triton_extra_arg;

enum { TRITON_MAX_EXTRA = 4 };

typedef struct triton_module {
  int ok;                   /* compiled */
  char hash[KEVO_HASH_HEX]; /* content hash of the request and the Triton that served it */
  unsigned char *cubin;     /* NULL unless ok */
  size_t cubin_size;
  char name[256]; /* entry name in the cubin */
  int num_warps, num_stages, threads, shared, num_ctas;
  int launch_pdl, launch_cooperative_grid;
  size_t nextra;
  triton_extra_arg extra[TRITON_MAX_EXTRA];
  cJSON *info; /* the server's whole info object (params, constexprs, ...), owned; or NULL */
  size_t ndiags;
  triton_diag *diags;
  double compile_ms; /* wall time of this call (near 0 on a cache hit) */
  int cached;        /* 0 compiled now, 1 memory cache, 2 disk cache */
  char arch[16];
  char triton_version[32];
} triton_module;

/* Compiles one source. KEVO_OK with (*out)->ok; KEVO_E_COMPILE with *out filled (diags) when
 * the source was rejected or did not compile; KEVO_E_TIMEOUT (deadline: the server was killed),
 * KEVO_E_WORKER (the server died), KEVO_E_UNSUPPORTED (no python/Triton) with *out NULL. */
int triton_compile(triton_pool *p, const triton_compile_opts *opts, triton_module **out,
                   kevo_error *err);

/* Compiles n sources on up to the pool's servers at once; out[i], rcs[i], errs[i] as
 * triton_compile gives them. Returns when all are done. */
void triton_compile_many(triton_pool *p, const triton_compile_opts *opts, size_t n,
                         triton_module **out, int *rcs, kevo_error *errs);

void triton_module_free(triton_module *m);

/* --- launch plans (triton_plan.c) ---------------------------------------------------------- */

/* Triton's launch options and the values that can make a kernel: num_warps a power of two from
 * 1 to 32 (a block is 32 * num_warps threads, at most 1024), num_stages from 1 to 8. */
enum { TRITON_MAX_WARPS = 32, TRITON_MAX_STAGES = 8 };

/* 1 when name is a compile option (num_warps, num_stages) rather than a constexpr. */
int triton_is_option(const char *name);
/* Checks a compile option's value: KEVO_OK (and *out, when out is not NULL), or KEVO_E_ARG with
 * a message that names the option, the value and what it must be ("num_warps must be a power
 * of two from 1 to 32, got '3'"). value: the knob's text ("4"). */
int triton_option_value(const char *name, const char *value, int *out, kevo_error *err);

/* Triton's pointer type for a kevo dtype name ("f32" -> "*fp32"), or NULL. */
const char *triton_pointer_type(const char *dtype);

/* A Triton signature (a JSON array of types, positional over the kernel's non-constexpr
 * parameters) for one kernel launch of a resolved plan: {"buf": name} becomes the pointer type
 * of that tensor's dtype (dtype_of(name) gives kevo's dtype name, or NULL for a scratch buffer,
 * which is "*u8"); {"i32": v} becomes "i32", {"f32": v} "fp32", and so on. The caller deletes
 * *out. KEVO_E_ARG names the argument it cannot type. */
int triton_plan_signature(const cJSON *launch, const char *(*dtype_of)(const char *, void *),
                          void *ud, cJSON **out, kevo_error *err);

/* Finishes one kernel launch of a resolved plan for a compiled Triton module, in place: block
 * becomes [threads, 1, 1] and shared the module's dynamic shared memory (a launch that gave
 * other values is an error: Triton decides them), name the module's entry, and the calling
 * convention's extra arguments are appended: {"null": true}, or {"buf": "<scratch name>"}
 * with a scratch entry added to plan["scratch"] when the module needs global scratch memory.
 * `index` numbers the launch within the plan (for scratch names). */
int triton_plan_finish(cJSON *plan, cJSON *launch, int index, const triton_module *m,
                       kevo_error *err);

#endif
