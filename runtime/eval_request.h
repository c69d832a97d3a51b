/* eval_request.h: the worker request of an evaluation and the reply merged into its result
 * (eval_request.c). Internal to the evaluator (evaluate.c). */
#ifndef KEVO_EVAL_REQUEST_H
#define KEVO_EVAL_REQUEST_H

#include "evaluate.h"
#include "launch.h"

/* The shapes one evaluation verifies on: the recipe's (shapes[0] the benchmark one), then
 * held-out shapes drawn from its domain with a secret seed (getrandom), none equal to another.
 * Held-out shapes own their params and label (eval_shapes_free). */
enum { EVAL_HELD_OUT = 2 };
typedef struct eval_shapes {
  kevo_shape s[64 + EVAL_HELD_OUT];
  size_t n, nheld; /* the held-out ones are s[n - nheld .. n) */
} eval_shapes;
/* held: whether to draw held-out shapes (not for an external reference, whose shapes are
 * fixed by the model it runs). Never fails: a domain with no valid draw gives fewer. */
void eval_shapes_make(const kevo_recipe *r, int held, eval_shapes *out);
void eval_shapes_free(eval_shapes *sh);
/* 64 bits from getrandom (the kernel's CSPRNG); a secret no candidate can rebuild. */
uint64_t eval_secret64(void);

/* The worker's evaluate request for recipe r at shapes sh (everything but the plans, which the
 * caller adds to shapes[i].candidate / .reference): ncand candidate modules (blobs
 * 0..ncand-1), then the reference (blob ncand). seed 0: none is sent, the worker draws a secret
 * one for this evaluation. Each shape carries its stress inits, held-out ones "held_out": true.
 * race_ms > 0: the incumbent's median, for racing (docs/worker.md "Racing"). */
int eval_build_request(const kevo_recipe *r, const eval_shapes *sh, const eval_config *cfg,
                       uint64_t seed, double race_ms, cJSON *req, int ncand, kevo_error *err);

/* What a launch chunk may see of the device, from the worker's hello (dev NULL: unknown). */
void eval_device_of(const cJSON *dev, launch_device *out);

/* Copies the worker's reply into res and fills what it leaves out (speedup, roofline). */
void eval_merge_reply(cJSON *res, const cJSON *reply, const cJSON *dev);

#endif
