/* redis_queue.h: the evaluation job queue in Redis that drivers and GPU hosts share
 * (docs/redis.md): the connection (URL, password, reconnecting), the key layout, and the
 * server-side scripts both sides run. The driver's transport is eval_redis.c, the GPU host's
 * bridge cmd_worker_redis.c.
 *
 * Layout, for an architecture A (sm_90; a driver's sm_90a goes to sm_90's stream):
 *   kevo:jobs:A         stream of jobs, consumer group "workers"; an entry holds "job" (the
 *                       job id), "header" (the request's JSON), "nblobs", "b0".. (cubins, ...),
 *                       "run_ms" (the deadline of the evaluation itself) and "queue_ms" (how
 *                       long it may wait to be taken, from its entry id's time)
 *   kevo:workers:A      sorted set: a live worker's consumer name, scored by the server time
 *                       (ms) its heartbeat expires at
 *   kevo:devices:A      hash: consumer name -> its device (the worker's hello)
 *   kevo:done:J         the job's first (only) outcome was taken: "done" or "cancelled"
 *   kevo:reply:J        list with the reply frame (u32 LE header length, JSON header, blobs)
 *   kevo:tries:J        list: who took the job, for the reason a job retried too often fails
 * Time is always the Redis server's (TIME inside scripts, entry ids), never a host's clock. */
#ifndef KEVO_REDIS_QUEUE_H
#define KEVO_REDIS_QUEUE_H

#include <signal.h>
#include <stddef.h>

#include "proto.h"
#include "status.h"

typedef struct redisContext redisContext;
typedef struct redisReply redisReply;

enum {
  RQ_NAME_MAX = 256,
  RQ_HOST_MAX = 256,
  RQ_RESULT_TTL_S = 3600,     /* done markers, replies and tries expire after this */
  RQ_HEARTBEAT_MS = 1000,     /* a worker beats this often */
  RQ_HEARTBEAT_TTL_MS = 5000, /* and is taken for dead this long after its last beat */
  /* how much longer than a job's queue wait and deadline its driver waits: the hops through
   * Redis, and a worker that must start a fresh GPU process (a CUDA context) first */
  RQ_HOP_MARGIN_MS = 15000,
};
/* The largest job (header and blobs together) a driver sends unless told otherwise: cubins
 * are a few MB; Redis itself refuses one string over 512 MB. */
#define RQ_DEFAULT_MAX_PAYLOAD ((size_t)64 << 20)
#define RQ_GROUP "workers"

typedef struct rq_url {
  char host[RQ_HOST_MAX];
  int port;
  int db;
  char user[RQ_NAME_MAX];       /* "" : the default user */
  char password[RQ_NAME_MAX];   /* "" : none */
  char shown[RQ_HOST_MAX + 64]; /* redis://host:port/db, for messages: never the password */
} rq_url;

/* Parses redis://[[user]:password@]host[:port][/db]. When password_env names a set environment
 * variable, the password is read from it (and wins over one in the URL). KEVO_E_ARG names what
 * is wrong. */
int rq_url_parse(const char *text, const char *password_env, rq_url *out, kevo_error *err);

/* One connection that comes back: rq_command reconnects (AUTH, SELECT again) after the server
 * went away, trying until deadline_ms (monotonic; < 0: once). */
typedef struct rq_conn {
  rq_url url;
  redisContext *ctx;
  int timeout_ms; /* socket read/write timeout; blocking commands add their own wait */
  int reconnects; /* times the link was made again after a loss */
  /* when set and nonzero (a signal handler's flag), a lost link is not waited for: the command
   * fails at once with KEVO_E_IO (a worker told to stop while Redis is away) */
  volatile sig_atomic_t *stop;
} rq_conn;

/* Connects, authenticates and selects the database. A refused password is KEVO_E_ARG ("the
 * Redis server refused the password ..."); an unreachable server KEVO_E_IO. */
int rq_connect(rq_conn *c, const rq_url *url, int timeout_ms, kevo_error *err);
void rq_close(rq_conn *c);

/* Runs one command (argv with lengths; binary-safe) and returns its reply (caller frees with
 * freeReplyObject). A lost link is made again and the command sent again until deadline_ms
 * (monotonic ms, rq_now_ms()) passes, with a growing pause between tries: KEVO_E_IO then.
 * extra_ms: how much longer than the socket timeout the command may block (BLPOP, XREADGROUP
 * BLOCK). An error reply is KEVO_E_WORKER with Redis's text, unless ok_error is a prefix of it
 * (then the error reply is returned like any other). Never NULL on KEVO_OK. */
int rq_command(rq_conn *c, int argc, const char **argv, const size_t *lens, long long deadline_ms,
               int extra_ms, const char *ok_error, redisReply **out, kevo_error *err);
/* The same for string arguments only (NULL-terminated list). */
int rq_commandv(rq_conn *c, long long deadline_ms, int extra_ms, redisReply **out, kevo_error *err,
                ...) __attribute__((sentinel));

long long rq_now_ms(void); /* monotonic */
double rq_clock_ms(void);  /* monotonic, to the microsecond: for measuring */

/* The stream of architecture arch ("sm_90a" -> "sm_90"): writes "sm_90" into base. KEVO_E_ARG
 * for what is not sm_NN[a|f]. */
int rq_arch_base(const char *arch, char *base, size_t cap, kevo_error *err);
void rq_key(char *out, size_t cap, const char *kind, const char *name); /* "kevo:<kind>:<name>" */

/* Makes the consumer group of a stream (and the stream) unless they exist. */
int rq_ensure_group(rq_conn *c, const char *stream, long long deadline_ms, kevo_error *err);

/* Server-side scripts (EVAL), one per step that must be atomic. COMPLETE and CANCEL reach the
 * stream through redis.pcall: a stream lost with a server that restarted without its AOF must
 * not stop the outcome from being written. */
extern const char RQ_LUA_HEARTBEAT[]; /* KEYS workers, devices; ARGV consumer, ttl_ms, device */
extern const char RQ_LUA_LEAVE[];     /* KEYS workers, devices; ARGV consumer */
extern const char RQ_LUA_ALIVE[];     /* KEYS workers, devices -> {count, device, ...} */
extern const char RQ_LUA_COMPLETE[];  /* KEYS done, reply, stream; ARGV frame, ttl_s, group,
                                         entry -> 1 when this was the job's first outcome */
extern const char RQ_LUA_SCREEN[];    /* KEYS done, tries, stream; ARGV group, entry, consumer,
                                         max_tries -> {0 go on | 1 answered or withdrawn (the
                                         entry is deleted) | 2 taken too often, deliveries,
                                         server time ms[, takers]}; on 0 adds consumer to tries */
extern const char RQ_LUA_CANCEL[];    /* KEYS done, stream; ARGV ttl_s, group, entry -> 1 when
                                         cancelled, 0 when an outcome came first */

/* A frame in memory, as proto.h lays it out on a pipe: encode writes header (with "blobs" set
 * from the blobs) and blobs into one malloc'd buffer; decode reads one back (owning copies,
 * kevo_frame_free). KEVO_E_PARSE for a buffer that is no frame. */
int rq_frame_encode(cJSON *header, const kevo_blob *blobs, size_t nblobs, char **out, size_t *len,
                    kevo_error *err);
int rq_frame_decode(const char *buf, size_t len, kevo_frame *out, kevo_error *err);

/* 32 hex digits from getrandom: a job id no other driver draws. */
void rq_job_id(char out[33]);

#endif
