/* eval_pool.h: the workers behind an evaluator (docs/architecture.md "Evaluator pool").
 *
 * A transport is one way of reaching one worker: it answers hello (device), takes one request
 * with a deadline and gives its reply, counts what happened (stats), and is freed. The local
 * pipe worker (eval_client.h, one process per GPU) is the first kind; a pool holds N
 * transports, and the evaluator spreads a batch over them, one thread per transport.
 *
 * Plugging in a new transport (Redis, ...):
 *   1. write its core with the same contract as eval_client.h: a `device` and a `request`
 *      with exactly evalclient_request's signature and semantics (KEVO_E_TIMEOUT past the
 *      deadline, KEVO_E_WORKER when the worker is gone, KEVO_E_NOGPU, a "crash" verdict
 *      counted in stats.deaths);
 *   2. fill an eval_transport_ops with small wrappers (void *self -> your type) and make
 *      transports with eval_transport_new(&ops, self, label, gpu);
 *   3. add them to a pool (eval_pool_add) and hand the pool to evaluator_new_pool.
 * One transport is used by one thread at a time (the pool guarantees it); different
 * transports of a pool run concurrently, so they must share no unlocked state.
 *
 * Each transport has a thread of its own for the pool's life (eval_pool_each runs work on
 * them): a local worker is forked with PR_SET_PDEATHSIG, which fires when the *thread* that
 * forked it ends, so a worker (or a PyTorch bridge) started from a short-lived thread would be
 * killed with it. Work that may start a process for a transport runs on that thread. */
#ifndef KEVO_EVAL_POOL_H
#define KEVO_EVAL_POOL_H

#include <stddef.h>

#include "eval_client.h"
#include "proto.h"
#include "status.h"

typedef struct eval_transport_ops {
  const char *kind; /* "local", "redis", ... (kevo doctor, messages) */
  /* the worker's device (a hello reply's "device"), owned by the transport, valid until the
   * next call on it; starts the worker if needed */
  int (*device)(void *self, const cJSON **device, kevo_error *err);
  /* evalclient_request's contract */
  int (*request)(void *self, cJSON *req, const kevo_blob *blobs, size_t nblobs, double deadline_s,
                 kevo_frame *reply, kevo_error *err);
  evalclient_stats (*stats)(const void *self);
  /* nonzero when device() would answer without starting anything (a live worker that said
   * hello); NULL: never */
  int (*ready)(const void *self);
  void (*free)(void *self); /* NULL self is fine */
} eval_transport_ops;

typedef struct eval_transport {
  const eval_transport_ops *ops;
  void *self;
  char label[64]; /* how messages name it: "gpu 1", "redis sm_90" */
  char gpu[64];   /* what names its GPU in a result's device.gpu: "1"; "" for none */
} eval_transport;

/* A transport over `self` (ownership passes to it: freed by ops->free even on failure). */
int eval_transport_new(const eval_transport_ops *ops, void *self, const char *label,
                       const char *gpu, eval_transport **out, kevo_error *err);
void eval_transport_free(eval_transport *t);

/* A local pipe worker (eval_client.h) as a transport. gpu: CUDA_VISIBLE_DEVICES for it (and
 * its label "gpu N"), or NULL to pass the driver's on (label "local"). */
int eval_transport_local(const evalclient_opts *o, const char *gpu, eval_transport **out,
                         kevo_error *err);

typedef struct eval_pool eval_pool;

int eval_pool_new(eval_pool **out, kevo_error *err);
/* Adds t (the pool owns it from now on, also on failure). */
int eval_pool_add(eval_pool *p, eval_transport *t, kevo_error *err);
size_t eval_pool_size(const eval_pool *p);
eval_transport *eval_pool_at(eval_pool *p, size_t i);
void eval_pool_free(eval_pool *p); /* frees every transport; NULL is fine */

/* A pool whose workers can join while it lives (Redis: a worker started after the evaluator).
 * grow(arg, p, err) adds the transports that became worth having (eval_pool_add); the pool
 * owns arg (free_arg(arg) when it is freed or another grow is set). eval_pool_grow calls it;
 * the evaluator does so before each batch, when no transport is in use, so grow may use
 * them. A pool without one does not grow (KEVO_OK). */
typedef int (*eval_pool_grow_fn)(void *arg, eval_pool *p, kevo_error *err);
void eval_pool_set_grow(eval_pool *p, eval_pool_grow_fn grow, void *arg, void (*free_arg)(void *));
int eval_pool_grow(eval_pool *p, kevo_error *err);

/* The pool `kevo run --gpus SPEC` asks for: SPEC NULL or "" is one worker on the driver's
 * CUDA_VISIBLE_DEVICES (today's default); "all" is one worker per GPU the driver can see
 * (eval_pool_count_gpus); "0,2,3" one worker per listed ordinal, each with
 * CUDA_VISIBLE_DEVICES set to it (an ordinal counts the GPUs the driver sees: with the
 * driver's own CUDA_VISIBLE_DEVICES=4,5, "1" is GPU 5). KEVO_E_ARG for a malformed or
 * repeated list; KEVO_E_NOGPU for "all" on a machine without a GPU. */
int eval_pool_local(const char *spec, const evalclient_opts *o, eval_pool **out, kevo_error *err);

/* eval_pool_local, but the pool may be one an earlier evaluator of this process left parked
 * (eval_pool_release) for the same spec, worker command, hello timeout and
 * CUDA_VISIBLE_DEVICES: its workers are already running, so the next problem of a suite
 * starts none (a CUDA context and the worker's probes per GPU). A worker keeps nothing of an
 * evaluator's between requests that another finds (every request carries its modules, inputs
 * and reference; cached reference outputs are keyed by a seed each evaluator draws itself,
 * unless its config fixes one).
 * The pool returned is the caller's until released. */
int eval_pool_local_kept(const char *spec, const evalclient_opts *o, eval_pool **out,
                         kevo_error *err);
/* Frees p, or parks it for the next eval_pool_local_kept when it came from one (one pool is
 * parked at a time: the one parked before is freed). NULL is fine. A parked pool lives until
 * the process ends; its workers die with it (PR_SET_PDEATHSIG). */
void eval_pool_release(eval_pool *p);

/* The GPUs a worker started with the driver's environment sees: *out a JSON array of
 * {"index", "name", "cc", "pci_bus", "mem_bytes"} (caller frees), from the worker's `devices`
 * op (docs/worker.md). KEVO_E_NOGPU without any. */
int eval_pool_list_gpus(const evalclient_opts *o, cJSON **out, kevo_error *err);

/* Every transport's device, asked concurrently (hello: a CUDA context each). Checks that the
 * GPUs are one model (name and compute capability): a speed-up is a ratio on one GPU, and a
 * search compares speed-ups, so GPUs of two models are never mixed in one pool; KEVO_E_ARG
 * names them and which to pick. *first: the first transport's device. KEVO_E_NOGPU when any
 * worker says there is no GPU; KEVO_E_WORKER when one does not answer (its label first). */
int eval_pool_devices(eval_pool *p, const cJSON **first, kevo_error *err);

/* Runs fn(arg, i) for i in [0, n) (n <= eval_pool_size), each on transport i's own thread,
 * all at once, and returns when every one has returned. Where a thread cannot be made, runs
 * that part on the calling thread instead. Not reentrant: one caller at a time. */
void eval_pool_each(eval_pool *p, size_t n, void (*fn)(void *arg, size_t i), void *arg);

/* Sum of every transport's stats. */
evalclient_stats eval_pool_stats(const eval_pool *p);

#endif
