/* eval_client.h: the driver's side of one evaluator worker (docs/architecture.md "Evaluator
 * worker protocol").
 *
 * The client starts the worker lazily: `kevo worker` through /proc/self/exe, or the command
 * line in opts.worker_cmd or $KEVO_WORKER (run by /bin/sh, for tests and remote workers), with
 * a scrubbed environment (PATH, HOME, LANG, LD_LIBRARY_PATH, CUDA_VISIBLE_DEVICES and KEVO_*
 * variables that do not look like secrets), its stdin and stdout on pipes, and a parent-death
 * signal so it never outlives the driver. It says hello once per worker and keeps the device.
 * Every request has a deadline: past it the worker is killed (SIGKILL) and reaped, and the
 * next request starts a fresh one. A worker that dies, speaks garbage or answers a crash
 * verdict is replaced the same way. Not thread-safe: one caller at a time. */
#ifndef KEVO_EVAL_CLIENT_H
#define KEVO_EVAL_CLIENT_H

#include <stddef.h>

#include "proto.h"
#include "status.h"

typedef struct evalclient evalclient;

typedef struct evalclient_opts {
  const char *worker_cmd; /* NULL: $KEVO_WORKER, else `kevo worker` (this executable) */
  const char *gpu;        /* CUDA_VISIBLE_DEVICES for the worker, or NULL to pass ours on */
  double hello_timeout_s; /* start-up and hello; 0: 120 s (a CUDA context can take a while) */
} evalclient_opts;

typedef struct evalclient_stats {
  int spawns;   /* workers started */
  int kills;    /* killed at a deadline or for speaking garbage */
  int deaths;   /* found dead (EOF), or exited after a crash verdict */
  int requests; /* requests answered */
} evalclient_stats;

int evalclient_new(const evalclient_opts *opts, evalclient **out, kevo_error *err);
/* Says bye, gives the worker a moment to exit, then kills and reaps it. NULL is fine. */
void evalclient_free(evalclient *c);

/* The worker's device (the hello reply's "device" object, owned by the client, valid until
 * the next call), starting a worker if none runs. KEVO_E_NOGPU when the worker says there is
 * no GPU (cached: no worker is started again for it); KEVO_E_WORKER when it cannot be started
 * or does not answer hello. */
int evalclient_device(evalclient *c, const cJSON **device, kevo_error *err);

/* Sends request `req` (its "id" is set here) with its blobs, and waits for the reply for at
 * most deadline_s seconds (<= 0: no deadline). KEVO_OK with *reply filled (caller frees with
 * kevo_frame_free). KEVO_E_TIMEOUT: no reply in time, the worker was killed. KEVO_E_WORKER:
 * the worker died before replying (the message says how: exit status or signal), or replied
 * garbage or another request's id; it is gone either way. KEVO_E_NOGPU as for
 * evalclient_device. A reply whose "verdict" is "crash" retires the worker after the reply. */
int evalclient_request(evalclient *c, cJSON *req, const kevo_blob *blobs, size_t nblobs,
                       double deadline_s, kevo_frame *reply, kevo_error *err);

/* The pid of the running worker, or 0. */
int evalclient_pid(const evalclient *c);
evalclient_stats evalclient_get_stats(const evalclient *c);

/* Nonzero when environment variable `name` (as in "NAME=value" or "NAME") may be passed to a
 * worker. Exposed for tests. */
int evalclient_env_allowed(const char *name);

#endif
