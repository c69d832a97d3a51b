/* evalint.h: what evaluate.c and evalrequest.c share. Internal to the evaluator. */
#ifndef KEVO_EVALINT_H
#define KEVO_EVALINT_H

#include "evaluate.h"
#include "launch.h"

/* The worker's evaluate request for recipe r (everything but the plans, which the caller
 * adds to shapes[i].candidate / .reference): ncand candidate modules (blobs 0..ncand-1), then
 * the reference (blob ncand). */
int eval_build_request(const kevo_recipe *r, const eval_config *cfg, cJSON *req, int ncand,
                       kevo_error *err);

/* What a launch chunk may see of the device, from the worker's hello (dev NULL: unknown). */
void eval_device_of(const cJSON *dev, launch_device *out);

/* Copies the worker's reply into res and fills what it leaves out (speedup, roofline). */
void eval_merge_reply(cJSON *res, const cJSON *reply, const cJSON *dev);

#endif
