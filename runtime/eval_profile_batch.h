/* eval_profile_batch.h: one worker `profile` request for several candidates (docs/profile.md).
 * evaluate.c builds each candidate's evaluate request as it always does; in profile mode it
 * hands that request here instead of sending it, and the batch merges them: the candidates'
 * modules one after another, their benchmark-shape plans with module indices moved, the
 * reference once. Sent as one request, so ncu starts once for the batch. */
#ifndef KEVO_EVAL_PROFILE_BATCH_H
#define KEVO_EVAL_PROFILE_BATCH_H

#include <stddef.h>

#include "eval_client.h"
#include "eval_pool.h"
#include "proto.h"
#include "status.h"

typedef struct cJSON cJSON;
typedef struct profbatch profbatch;

profbatch *profbatch_new(size_t ncands, int with_reference);
void profbatch_free(profbatch *pb);

/* Thread-safe: the pool's threads add and skip at once. Candidate i's evaluate request (req:
 * shapes[0] holds its "candidate" and, when the evaluator has one, "reference" plan) and blobs (its
 * ncand modules, then the reference's when has_ref). The blobs are copied. A candidate that does
 * not fit (the worker loads at most 16 modules per request) or repeats gets an error instead. */
void profbatch_add(profbatch *pb, size_t i, const cJSON *req, const kevo_blob *blobs, int ncand,
                   int has_ref);
/* Why candidate i has no plan in the batch (it did not compile, no GPU, ...): its result's
 * verdict and message. */
void profbatch_skip(profbatch *pb, size_t i, const char *reason, const char *why);

/* Sends the batch through request(self, ...) (a transport's: eval_pool.h; deadline:
 * deadline_ms for ncu, the transport waits 15 s longer) and fills
 * profiles[i] with eval_profile_object of candidate i (bounds[i]: its bench's "memory" or
 * "compute", or NULL). Never fails for the candidates' or the profiler's sake: those are in
 * the objects. */
typedef int (*profbatch_request_fn)(void *self, cJSON *req, const kevo_blob *blobs, size_t nblobs,
                                    double deadline_s, kevo_frame *reply, kevo_error *err);
void profbatch_send(profbatch *pb, profbatch_request_fn request, void *self, double deadline_ms,
                    const char *const *bounds, cJSON **profiles);

#endif
