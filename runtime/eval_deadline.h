/* eval_deadline.h: how long the worker may take to answer one evaluate request, derived from
 * the problem rather than fixed (eval_deadline.c; docs/worker.md "Deadlines").
 *
 * A kernel that never ends must be killed, and an honest one on a large problem must not be:
 * one fixed number cannot serve a 4 KiB vector add and a 8 GiB KernelBench problem whose
 * PyTorch reference takes a second. The deadline allows every run of the request (each
 * candidate twice and the reference once per trial and shape) at EVAL_DEADLINE_SLOWER times the
 * time one run takes (the reference's measured time when known, else the bytes it moves at the
 * GPU's copy bandwidth), plus the timing loop's own bound and a fixed start-up allowance,
 * within [EVAL_DEADLINE_FLOOR_S, EVAL_DEADLINE_CEILING_S]. */
#ifndef KEVO_EVAL_DEADLINE_H
#define KEVO_EVAL_DEADLINE_H

typedef struct cJSON cJSON;

#define EVAL_DEADLINE_FLOOR_S 20.0
#define EVAL_DEADLINE_CEILING_S 600.0
#define EVAL_DEADLINE_SLOWER                                                                       \
  100.0                            /* a candidate this many times slower than one run still ends   \
                                    */
#define EVAL_DEADLINE_START_S 10.0 /* context, modules, allocation, input draws */

typedef struct eval_deadline {
  double s;      /* seconds */
  double run_ms; /* what one run was taken to cost */
  char why[320]; /* how it was derived, for the verdict when it expires */
} eval_deadline;

/* The deadline of evaluate request req (its shapes, verify.trials, bench and cost.bytes) for
 * ncand candidates, on a GPU copying copy_gbps (0: unknown, taken as 1000), with ref_ms the
 * reference's measured time per run (0: not measured yet). */
void eval_deadline_of(const cJSON *req, int ncand, double copy_gbps, double ref_ms,
                      eval_deadline *out);

#endif
