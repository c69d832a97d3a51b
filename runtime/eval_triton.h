/* eval_triton.h: the Triton half of evaluate.c (docs/triton.md). A Triton candidate's launch chunk
 * is resolved first (at the benchmark shape); each kernel it launches becomes one compile job
 * whose signature comes from the launch's arguments (triton_plan_signature), whose constexprs
 * are the knobs the kernel declares, and whose num_warps / num_stages are the knobs of those
 * names. After the pool compiled the jobs, every shape's plan is finished for the cubins
 * (triton_plan_finish: block from num_warps, Triton's shared memory, the trailing scratch or
 * null pointers) and each launch points at its job's module. Internal to the evaluator. */
#ifndef KEVO_EVAL_TRITON_H
#define KEVO_EVAL_TRITON_H

#include <stddef.h>

#include "cuda_compile.h"
#include "status.h"
#include "triton.h"

typedef struct cJSON cJSON;

enum { EVTRI_MAX_JOBS = 8 };

typedef struct evtri_job {
  char kernel[128]; /* the @triton.jit function */
  cJSON *signature; /* owned */
  cJSON *constexprs;
  int num_warps, num_stages;
  triton_module *mod; /* after compiling */
  int rc;
  kevo_error err;
} evtri_job;

typedef struct evtri_prep {
  size_t njobs;
  evtri_job jobs[EVTRI_MAX_JOBS];
} evtri_prep;

/* The compile jobs of a resolved plan (one per distinct kernel name). knobs are the ones the
 * caller gave (not the defaults): num_warps and num_stages become options, the others
 * constexprs of the kernels that declare them (a knob no kernel declares goes to every
 * kernel, which then refuses it by name). dtype_of maps a buffer name to its dtype name.
 * KEVO_E_LAUNCH with a message when the plan cannot be typed. */
int evtri_prepare(const cJSON *plan, const char *src, size_t len, const kevo_define *knobs,
                  size_t nknobs, const char *(*dtype_of)(const char *, void *), void *ud,
                  evtri_prep *out, kevo_error *err);

/* triton_compile options of job i. */
void evtri_compile_opts(const evtri_prep *p, size_t i, const char *src, size_t len,
                        const char *name, const char *arch, triton_compile_opts *o);

/* Finishes the candidate plan of every shape in `shapes` (key "candidate") for the compiled
 * jobs: each launch's signature must match its job's (KEVO_E_LAUNCH otherwise), then
 * triton_plan_finish, and its module becomes the job's index. */
int evtri_finish(const evtri_prep *p, cJSON *shapes, const char *(*dtype_of)(const char *, void *),
                 void *ud, kevo_error *err);

/* The result's "compile" object for the jobs (ms summed, cached when all were, diagnostics of
 * the failing job, kernels with their shared memory and warps). */
cJSON *evtri_compile_json(const evtri_prep *p, const char *arch);

/* The first job that did not compile, or NULL. */
const evtri_job *evtri_failed(const evtri_prep *p);

void evtri_prep_free(evtri_prep *p);

#endif
