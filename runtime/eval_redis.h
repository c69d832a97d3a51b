/* eval_redis.h: the driver's side of evaluation through Redis Streams (docs/redis.md): the
 * same requests and replies as eval_client.h's pipe to a local worker, carried as jobs to
 * `kevo worker --redis` processes on GPU hosts (runtime/redis_queue.h has the layout).
 *
 * A request becomes a job on the stream of the driver's architecture (the cubins, the
 * request's JSON, a fresh job id); the first reply a worker writes for the job id is the only
 * one (results are idempotent by job id). A worker that dies holds its job only until the
 * claim timeout, then another takes it; a job taken too often fails with that reason (the
 * workers' side, cmd_worker_redis.c). The connection to Redis comes back by itself: a server
 * restart costs time, not the job. Not thread-safe: one caller at a time. */
#ifndef KEVO_EVAL_REDIS_H
#define KEVO_EVAL_REDIS_H

#include <stddef.h>

#include "eval_client.h"
#include "eval_pool.h"
#include "proto.h"
#include "status.h"

typedef struct evalredis evalredis;

typedef struct evalredis_opts {
  const char *url;          /* redis://[user:password@]host[:port][/db] */
  const char *password_env; /* the environment variable holding the password, or NULL */
  const char *arch;         /* the architecture candidates are compiled for (sm_90) */
  double queue_s;           /* how long a job may wait for a free worker; 0: 300 s */
  size_t max_payload;       /* bytes of one job (JSON and blobs); 0: RQ_DEFAULT_MAX_PAYLOAD */
} evalredis_opts;

/* Parses the URL and connects (AUTH, SELECT). KEVO_E_ARG for a bad URL, an unset password
 * variable or a refused password; KEVO_E_IO when the server cannot be reached. */
int evalredis_new(const evalredis_opts *opts, evalredis **out, kevo_error *err);
void evalredis_free(evalredis *r); /* NULL is fine */

/* The device of a live worker of the architecture (its hello, owned by r, valid until the next
 * call). KEVO_E_WORKER when no worker of that architecture is alive: the message names the
 * architectures that are, and how to start one. */
int evalredis_device(evalredis *r, const cJSON **device, kevo_error *err);

/* evalclient_request's contract, through the queue: sends req (its "id" set here) with its
 * blobs as one job and waits for its reply: at most the queue wait (opts.queue_s) plus
 * deadline_s (<= 0: no deadline for the evaluation itself) plus a margin for the hops.
 * KEVO_E_TIMEOUT: the worker killed its evaluation at deadline_s, or no reply came in time
 * (the job is then withdrawn: a late result is dropped). KEVO_E_WORKER: the worker's process
 * died before replying (stats.deaths counts it), the job was taken too often by workers that
 * died, or every worker of the architecture went away while the job waited. KEVO_E_NOMEM: the
 * job is larger than opts.max_payload (nothing is sent). KEVO_E_IO: Redis stayed unreachable
 * until the deadline. */
int evalredis_request(evalredis *r, cJSON *req, const kevo_blob *blobs, size_t nblobs,
                      double deadline_s, kevo_frame *reply, kevo_error *err);

/* A pool (eval_pool.h) of n Redis transports for opts->arch, so a batch keeps n jobs in
 * flight. n <= 0: one per worker of the architecture alive now, at most 256, and the pool
 * grows (eval_pool_grow, before each batch) by one per worker that joins later; it never
 * shrinks (a job for a worker that left waits in the stream for the others). KEVO_E_WORKER
 * when no worker of the architecture is alive; evalredis_new's errors. */
int eval_pool_redis(const evalredis_opts *opts, int n, eval_pool **out, kevo_error *err);

/* requests answered, deaths (worker processes that died on a job, crash verdicts); spawns and
 * kills stay 0: the workers are not the driver's. */
evalclient_stats evalredis_get_stats(const evalredis *r);
int evalredis_reconnects(const evalredis *r); /* times the link to Redis was made again */

#endif
