/* evaluate.h: judging one candidate against a recipe (docs/architecture.md "Evaluation
 * result"): compile it (NVRTC, knobs as defines) and the recipe's reference, resolve the launch
 * chunks of both into plans for every shape, send one evaluate request to the worker, and shape
 * what comes back into a result with a `feedback` text a model can act on.
 *
 * Expected failures of the candidate (it does not compile, its launch chunk is wrong, it gives
 * wrong results, crashes, hangs) and of the machine (no GPU, a worker that dies) are verdicts
 * in a result, not error returns: the functions return KEVO_OK with a result whenever they
 * could judge, and an error status only for misuse (KEVO_E_ARG) or memory. */
#ifndef KEVO_EVALUATE_H
#define KEVO_EVALUATE_H

#include <stddef.h>
#include <stdint.h>

#include "cuda_compile.h"
#include "eval_client.h"
#include "eval_pool.h"
#include "recipe.h"
#include "status.h"

typedef struct cJSON cJSON;

typedef struct eval_candidate {
  const char *lang; /* "cuda" | "triton" */
  const char *source;
  size_t len;
  const char *name;   /* file name for diagnostics; NULL: "candidate.cu" / "candidate.py" */
  const char *launch; /* a launch chunk that overrides the source's kevo:launch block, or NULL */
  const char *launch_name;  /* where that chunk comes from (diagnostics); NULL: "launch" */
  int launch_line;          /* its first line there; 0: 1 */
  const kevo_define *knobs; /* CUDA defines; the launch chunk sees them too */
  size_t nknobs;
} eval_candidate;

enum { EVAL_MIN_TRIALS = 5 }; /* design.md "Verify": at least 5 trials */
/* A candidate under way when a batch's start_by passes may go on this long past it; then its
 * worker is stopped and it is not_evaluated too: a run's --time holds within this, whatever a
 * kernel does (a hang would otherwise hold the run for the worker's whole deadline). */
#define EVAL_START_BY_OVERRUN_S 1.5

typedef struct eval_config {
  const char *arch;  /* NULL: cuda_default_arch() */
  int bench;         /* time it after it verifies */
  uint64_t seed;     /* inputs of the trials; 0: a secret seed per evaluation (getrandom) */
  int trials;        /* at least EVAL_MIN_TRIALS (less is raised to it) */
  double deadline_s; /* for the worker's answer; 0: from the problem (eval_deadline.h) */
  int race;          /* stop timing a candidate clearly slower than the fastest ok one so far */
  double start_by;   /* a batch's candidates not started by this time (seconds of CLOCK_MONOTONIC,
                      * kevo.clock's) are not evaluated: verdict not_evaluated; 0: no limit */
} eval_config;

/* The defaults every front end starts from (kevo.evaluator.new, evaluator_new with no config;
 * kevo eval, which judges one candidate, turns racing off): bench on, a secret seed,
 * EVAL_MIN_TRIALS trials, the deadline from the problem, racing on. */
#define EVAL_CONFIG_DEFAULT                                                                        \
  ((eval_config){.bench = 1, .seed = 0, .trials = EVAL_MIN_TRIALS, .deadline_s = 0, .race = 1})

typedef struct evaluator evaluator;

/* An evaluator for `recipe` (it takes ownership and frees it; on failure the caller still owns
 * it) with one local worker made from wopts (NULL: defaults). cfg NULL: EVAL_CONFIG_DEFAULT. */
int evaluator_new(kevo_recipe *recipe, const evalclient_opts *wopts, const eval_config *cfg,
                  evaluator **out, kevo_error *err);
/* The same over a pool of workers (eval_pool.h): it owns the pool from the call on (freed on
 * failure too) and the recipe once it succeeds. A batch is spread over the pool's workers, one
 * thread each. */
int evaluator_new_pool(kevo_recipe *recipe, eval_pool *pool, const eval_config *cfg,
                       evaluator **out, kevo_error *err);
/* How many workers the evaluator's pool has. */
size_t evaluator_workers(const evaluator *ev);
void evaluator_free(evaluator *ev);

const kevo_recipe *evaluator_recipe(const evaluator *ev);

/* The plans cand's launch chunk resolves to at every shape of the recipe, exactly as an
 * evaluation resolves them (the knobs given plus the source's own defaults), without compiling
 * or a worker: *out is a JSON array of {"label", "plan"} (caller frees). Triton plans are as the
 * chunk gives them (no calling-convention arguments yet). A chunk that reads `device` fails with
 * KEVO_E_NOGPU unless the evaluator already knows its device. For kevo export. */
int evaluator_plans(evaluator *ev, const eval_candidate *cand, cJSON **out, kevo_error *err);
eval_config *evaluator_config(evaluator *ev); /* to change bench, seed, ... between calls */

/* Checks the knob space of the recipe's seed number `seed` as evaluator_plans resolves it: the
 * seed's start (each knob at its first value), then every other value of every knob with the
 * rest at their first values, on every shape. A value that makes no launch (BLOCK=0: a block of
 * no threads, a division by zero in the chunk) is KEVO_E_LAUNCH, the message starting
 * "RECIPE: seeds[i].space: BLOCK=0 makes no launch: " then the chunk's own error. A chunk that
 * reads `device` passes (a GPU host checks it). For kevo check and kevo eval. */
int evaluator_check_space(evaluator *ev, size_t seed, kevo_error *err);

/* Judges one candidate: *result is a new cJSON object shaped as the "Evaluation result" of
 * docs/architecture.md (caller frees with cJSON_Delete). */
int evaluator_run(evaluator *ev, const eval_candidate *cand, cJSON **result, kevo_error *err);

/* Judges n candidates: compiles every CUDA one at once (cuda_compile_many), then verifies and
 * times them on the pool's workers, each taking the next compiled candidate in batch order
 * (one after another with one worker). results[i] as evaluator_run gives it, whatever order
 * the workers finish in. KEVO_E_ARG (nothing judged) when the pool's GPUs are of two models. */
int evaluator_run_many(evaluator *ev, const eval_candidate *cands, size_t n, cJSON **results,
                       kevo_error *err);

/* The profile stage (docs/profile.md): compiles and resolves the candidates as
 * evaluator_run_many does, then asks the (first) worker for their hardware metrics at the
 * benchmark shape, with the reference beside them when with_reference, in one ncu run per 12
 * candidates (deadline_ms each; 0: 30 s + 5 s per candidate). Never times or verifies anything.
 * profiles[i]: candidate i's "profile" object (eval_profile.h: {ok, candidate, reference,
 * diagnosis, feedback} or {ok = false, reason, error}), caller frees; bounds[i] (or NULL): its
 * bench's roofline bound, for the diagnosis. Errors: misuse and memory only. */
int evaluator_profile_many(evaluator *ev, const eval_candidate *cands, size_t n, int with_reference,
                           double deadline_ms, const char *const *bounds, cJSON **profiles,
                           kevo_error *err);

/* Starts the profile stage's standby on the first worker, once (docs/profile.md "Standby"):
 * ncu and its replay child start ahead of the next profile, and the worker starts the next one
 * after each profile. Best effort: a worker that cannot (no ncu, not a local worker) is left as
 * it is. evaluator_profile_many calls it; `kevo eval --profile` calls it before evaluating. */
void evaluator_profile_prepare(evaluator *ev);

/* The worker's device (its hello), starting the worker if needed. KEVO_E_NOGPU without one.
 * With a pool of several: every worker's hello at once, and KEVO_E_ARG when their GPUs are of
 * two models (eval_pool_devices); *device is the first one's. */
int evaluator_device(evaluator *ev, const cJSON **device, kevo_error *err);

/* Worker statistics (spawns, kills, deaths), summed over the pool, for benchmarks and tests. */
evalclient_stats evaluator_worker_stats(const evaluator *ev);

/* The feedback text of a shaped result (what evaluator_run puts in "feedback"): compile
 * diagnostics with the candidate's source lines, the worst mismatch, launch errors, timing
 * against the reference and the roofline, resource usage. Caller frees. Exposed for tests. */
char *eval_feedback(const cJSON *result, const char *source, size_t len);

#endif
