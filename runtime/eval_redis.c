#include "eval_redis.h"

#include "redis_queue.h"

#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BLPOP_S = 1, CANCEL_WAIT_MS = 5000 };

struct evalredis {
  rq_conn conn;
  char arch[32];
  char stream[64], workers[64], devices[64];
  long long queue_ms;
  long long alive_until; /* a worker was seen alive: no need to ask again before this */
  size_t max_payload;
  int group_made;
  long long next_id;
  cJSON *device;
  evalclient_stats stats;
};

int evalredis_new(const evalredis_opts *opts, evalredis **out, kevo_error *err) {
  *out = NULL;
  if (!opts || !opts->url) return kevo_fail(err, KEVO_E_ARG, "evalredis_new: no Redis URL");
  evalredis *r = calloc(1, sizeof *r);
  if (!r) return kevo_fail(err, KEVO_E_NOMEM, "no memory for a Redis evaluator");
  rq_url url;
  int rc = rq_url_parse(opts->url, opts->password_env, &url, err);
  if (!rc) rc = rq_arch_base(opts->arch, r->arch, sizeof r->arch, err);
  if (!rc) rc = rq_connect(&r->conn, &url, 5000, err);
  if (rc) {
    free(r);
    return rc;
  }
  rq_key(r->stream, sizeof r->stream, "jobs", r->arch);
  rq_key(r->workers, sizeof r->workers, "workers", r->arch);
  rq_key(r->devices, sizeof r->devices, "devices", r->arch);
  r->queue_ms = (long long)((opts->queue_s > 0 ? opts->queue_s : 300) * 1000);
  r->max_payload = opts->max_payload ? opts->max_payload : RQ_DEFAULT_MAX_PAYLOAD;
  *out = r;
  return KEVO_OK;
}

void evalredis_free(evalredis *r) {
  if (!r) return;
  rq_close(&r->conn);
  cJSON_Delete(r->device);
  free(r);
}

evalclient_stats evalredis_get_stats(const evalredis *r) {
  return r->stats;
}

int evalredis_reconnects(const evalredis *r) {
  return r->conn.reconnects;
}

/* EVAL script with the given keys and arguments (strings). */
static int run_script(evalredis *r, const char *script, int nkeys, const char **keys, int nargs,
                      const char **args, const size_t *arg_lens, long long deadline,
                      redisReply **out, kevo_error *err) {
  const char *argv[16];
  size_t lens[16];
  char nk[8];
  snprintf(nk, sizeof nk, "%d", nkeys);
  int n = 0;
  argv[n] = "EVAL", lens[n++] = 4;
  argv[n] = script, lens[n++] = strlen(script);
  argv[n] = nk, lens[n++] = strlen(nk);
  for (int i = 0; i < nkeys; i++)
    argv[n] = keys[i], lens[n++] = strlen(keys[i]);
  for (int i = 0; i < nargs; i++)
    argv[n] = args[i], lens[n++] = arg_lens ? arg_lens[i] : strlen(args[i]);
  return rq_command(&r->conn, n, argv, lens, deadline, 0, NULL, out, err);
}

/* How many workers of our architecture are alive; *device (if given) gets one's hello. */
static int alive(evalredis *r, long long deadline, long long *count, cJSON **device,
                 kevo_error *err) {
  const char *keys[] = {r->workers, r->devices};
  redisReply *rep;
  int rc = run_script(r, RQ_LUA_ALIVE, 2, keys, 0, NULL, NULL, deadline, &rep, err);
  if (rc) return rc;
  *count = rep->type == REDIS_REPLY_ARRAY && rep->elements >= 1 ? rep->element[0]->integer : 0;
  if (device) { /* the first one's; every live worker must have a GPU of its model */
    *device = NULL;
    for (size_t i = 1; !rc && i < rep->elements; i++) {
      cJSON *d = cJSON_ParseWithLength(rep->element[i]->str, rep->element[i]->len);
      if (!*device) {
        *device = d;
        continue;
      }
      const char *first = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(*device, "name"));
      const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "name"));
      if (name && first && strcmp(name, first)) {
        const char *h1 = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(*device, "host"));
        const char *h2 = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "host"));
        rc = kevo_fail(err, KEVO_E_ARG,
                       "the live %s workers on %s have GPUs of two models (%s on %s, %s on %s): "
                       "speed-ups are only compared on one model; give each model its own Redis "
                       "database (redis://host:port/N)",
                       r->arch, r->conn.url.shown, first, h1 ? h1 : "?", name, h2 ? h2 : "?");
      }
      cJSON_Delete(d);
    }
    if (rc) {
      cJSON_Delete(*device);
      *device = NULL;
    }
  }
  freeReplyObject(rep);
  return rc;
}

/* "sm_80: 2, sm_100: 1": the architectures whose workers are alive, for the no-worker error. */
static void others_alive(evalredis *r, long long deadline, char *out, size_t cap) {
  out[0] = '\0';
  size_t used = 0;
  char cursor[32] = "0";
  kevo_error ignored;
  do {
    redisReply *rep;
    if (rq_commandv(&r->conn, deadline, 0, &rep, &ignored, "SCAN", cursor, "MATCH",
                    "kevo:workers:*", "COUNT", "1000", (char *)NULL))
      return;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2) {
      freeReplyObject(rep);
      return;
    }
    snprintf(cursor, sizeof cursor, "%s", rep->element[0]->str ? rep->element[0]->str : "0");
    redisReply *keys = rep->element[1];
    for (size_t i = 0; i < keys->elements && used + 40 < cap; i++) {
      const char *arch = keys->element[i]->str + strlen("kevo:workers:");
      char wk[64], dk[64];
      rq_key(wk, sizeof wk, "workers", arch);
      rq_key(dk, sizeof dk, "devices", arch);
      const char *k2[] = {wk, dk};
      redisReply *a;
      if (!strcmp(arch, r->arch) ||
          run_script(r, RQ_LUA_ALIVE, 2, k2, 0, NULL, NULL, deadline, &a, &ignored))
        continue;
      long long n = a->type == REDIS_REPLY_ARRAY && a->elements ? a->element[0]->integer : 0;
      if (n > 0)
        used +=
            (size_t)snprintf(out + used, cap - used, "%s%.20s: %lld", used ? ", " : "", arch, n);
      freeReplyObject(a);
    }
    freeReplyObject(rep);
  } while (strcmp(cursor, "0"));
}

static int no_worker(evalredis *r, long long deadline, kevo_error *err) {
  char others[512];
  others_alive(r, deadline, others, sizeof others);
  return kevo_fail(err, KEVO_E_WORKER,
                   "no kevo worker for %s is alive on %s (%s%s); on a GPU host start one per GPU: "
                   "kevo worker --redis %s --device N",
                   r->arch, r->conn.url.shown, *others ? "workers alive: " : "none alive at all",
                   others, r->conn.url.shown);
}

int evalredis_device(evalredis *r, const cJSON **device, kevo_error *err) {
  *device = NULL;
  long long n = 0;
  cJSON *dev = NULL;
  int rc = alive(r, rq_now_ms() + 10000, &n, &dev, err);
  if (rc) return rc;
  if (n == 0 || !cJSON_IsObject(dev)) {
    cJSON_Delete(dev);
    return no_worker(r, rq_now_ms() + 10000, err);
  }
  cJSON_Delete(r->device);
  r->device = dev;
  *device = dev;
  return KEVO_OK;
}

/* XADDs the job; *entry gets its stream entry id. */
static int send_job(evalredis *r, const char *job, const char *header, const kevo_blob *blobs,
                    size_t nblobs, long long run_ms, long long deadline, char *entry, size_t cap,
                    kevo_error *err) {
  enum { FIXED = 13 };
  const char *argv[FIXED + 2 * KEVO_PROTO_MAX_BLOBS];
  size_t lens[FIXED + 2 * KEVO_PROTO_MAX_BLOBS];
  char names[KEVO_PROTO_MAX_BLOBS][8], run[24], queue[24], nb[8];
  snprintf(run, sizeof run, "%lld", run_ms);
  snprintf(queue, sizeof queue, "%lld", r->queue_ms);
  snprintf(nb, sizeof nb, "%zu", nblobs);
  const char *fixed[FIXED] = {"XADD",   r->stream, "*",        "job", job,      "header", header,
                              "run_ms", run,       "queue_ms", queue, "nblobs", nb};
  int n = 0;
  for (; n < FIXED; n++)
    argv[n] = fixed[n], lens[n] = strlen(fixed[n]);
  for (size_t i = 0; i < nblobs; i++) {
    snprintf(names[i], sizeof names[i], "b%zu", i);
    argv[n] = names[i], lens[n++] = strlen(names[i]);
    argv[n] = blobs[i].data ? blobs[i].data : "", lens[n++] = blobs[i].size;
  }
  redisReply *rep;
  int rc = rq_command(&r->conn, n, argv, lens, deadline, 0, NULL, &rep, err);
  if (rc) return rc;
  snprintf(entry, cap, "%s", rep->type == REDIS_REPLY_STRING ? rep->str : "0-0");
  freeReplyObject(rep);
  return KEVO_OK;
}

/* Withdraws a job no reply came for. Returns 1 when it was withdrawn, 0 when its outcome came
 * first (the caller takes the reply), -1 when Redis could not be asked. */
static int cancel_job(evalredis *r, const char *done, const char *entry, kevo_error *err) {
  const char *keys[] = {done, r->stream};
  char ttl[16];
  snprintf(ttl, sizeof ttl, "%d", RQ_RESULT_TTL_S);
  const char *args[] = {ttl, RQ_GROUP, entry};
  redisReply *rep;
  if (run_script(r, RQ_LUA_CANCEL, 2, keys, 3, args, NULL, rq_now_ms() + CANCEL_WAIT_MS, &rep, err))
    return -1;
  int cancelled = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
  freeReplyObject(rep);
  return cancelled;
}

/* KEVO_REDIS_TRACE=FILE: a line per reply, "ROUND_TRIP_MS WORKER_MS": the driver's wait and
 * the time the worker's GPU process took (bench/eval_redis.sh: the overhead per job). */
static void trace(double start, const cJSON *header) {
  const char *path = getenv("KEVO_REDIS_TRACE");
  const cJSON *w = cJSON_GetObjectItemCaseSensitive(header, "worker_ms");
  if (!path || !*path || !cJSON_IsNumber(w)) return;
  FILE *f = fopen(path, "a");
  if (!f) return;
  fprintf(f, "%.3f %.3f\n", rq_clock_ms() - start, w->valuedouble);
  fclose(f);
}

/* A reply frame from the queue into *reply, or the worker side's error into a status. */
static int take_reply(evalredis *r, const redisReply *item, long long id, double deadline_s,
                      double start, kevo_frame *reply, kevo_error *err) {
  int rc = rq_frame_decode(item->str, item->len, reply, err);
  if (rc) return kevo_fail(err, KEVO_E_WORKER, "a worker's reply through Redis: %s", err->msg);
  trace(start, reply->header);
  const char *code =
      cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply->header, "kevo_error"));
  if (code) {
    const char *msg =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply->header, "message"));
    const char *by = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply->header, "by"));
    int st = !strcmp(code, "E_TIMEOUT") ? KEVO_E_TIMEOUT
             : !strcmp(code, "E_NOGPU") ? KEVO_E_NOGPU
                                        : KEVO_E_WORKER;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply->header, "death"))) r->stats.deaths++;
    rc = st == KEVO_E_TIMEOUT
             ? kevo_fail(err, st, "no reply within %.3g s: the worker%s%s was killed", deadline_s,
                         by ? " on " : "", by ? by : "")
             : kevo_fail(err, st, "%s%s%s", msg ? msg : code, by ? " (worker " : "", by ? by : "");
    if (st != KEVO_E_TIMEOUT && by) {
      size_t n = strlen(err->msg);
      if (n + 1 < sizeof err->msg) err->msg[n] = ')', err->msg[n + 1] = '\0';
    }
    kevo_frame_free(reply);
    return rc;
  }
  cJSON_DeleteItemFromObjectCaseSensitive(reply->header, "id");
  cJSON_AddNumberToObject(reply->header, "id", (double)id);
  r->stats.requests++;
  const char *verdict =
      cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply->header, "verdict"));
  if (verdict && !strcmp(verdict, "crash")) r->stats.deaths++;
  return KEVO_OK;
}

int evalredis_request(evalredis *r, cJSON *req, const kevo_blob *blobs, size_t nblobs,
                      double deadline_s, kevo_frame *reply, kevo_error *err) {
  memset(reply, 0, sizeof *reply);
  if (nblobs > KEVO_PROTO_MAX_BLOBS)
    return kevo_fail(err, KEVO_E_ARG, "a request carries at most %d blobs", KEVO_PROTO_MAX_BLOBS);
  long long id = ++r->next_id;
  cJSON_DeleteItemFromObjectCaseSensitive(req, "id");
  cJSON_AddNumberToObject(req, "id", (double)id);
  char *header = cJSON_PrintUnformatted(req);
  if (!header) return kevo_fail(err, KEVO_E_NOMEM, "no memory for a request");
  size_t payload = strlen(header);
  for (size_t i = 0; i < nblobs; i++)
    payload += blobs[i].size;
  if (payload > r->max_payload) {
    free(header);
    return kevo_fail(err, KEVO_E_NOMEM,
                     "the job is %.1f MiB, over the limit of %.1f MiB for one job through Redis",
                     (double)payload / (1 << 20), (double)r->max_payload / (1 << 20));
  }
  long long run_ms = deadline_s > 0 ? (long long)(deadline_s * 1000) : 0;
  long long start = rq_now_ms();
  double clock0 = rq_clock_ms();
  long long until = run_ms ? start + r->queue_ms + run_ms + RQ_HOP_MARGIN_MS : -1;
  long long send_by = start + (r->queue_ms < 60000 ? r->queue_ms : 60000);
  char job[33], done[64], reply_key[64], entry[64];
  rq_job_id(job);
  rq_key(done, sizeof done, "done", job);
  rq_key(reply_key, sizeof reply_key, "reply", job);
  long long n = 1;
  int rc = start < r->alive_until ? KEVO_OK : alive(r, send_by, &n, NULL, err);
  if (!rc && n == 0) rc = no_worker(r, send_by, err);
  if (!rc) r->alive_until = start + RQ_HEARTBEAT_MS; /* a job a second needs no extra hop */
  if (!rc && !r->group_made && !(rc = rq_ensure_group(&r->conn, r->stream, send_by, err)))
    r->group_made = 1;
  if (!rc) rc = send_job(r, job, header, blobs, nblobs, run_ms, send_by, entry, sizeof entry, err);
  free(header);
  if (rc) return rc;

  long long lonely_since = 0; /* when we first saw no live worker while waiting */
  for (;;) {
    redisReply *rep;
    long long now = rq_now_ms();
    long long wait_until = until < 0 ? now + 60000 : until;
    rc = rq_commandv(&r->conn, wait_until, BLPOP_S * 1000, &rep, err, "BLPOP", reply_key, "1",
                     (char *)NULL);
    if (rc && rc != KEVO_E_IO) return rc;
    if (!rc && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2) {
      rc = take_reply(r, rep->element[1], id, deadline_s, clock0, reply, err);
      freeReplyObject(rep);
      return rc;
    }
    if (!rc) freeReplyObject(rep);
    now = rq_now_ms();
    if (rc == KEVO_E_IO && until < 0) continue; /* no deadline: wait for Redis to come back */
    if (until >= 0 && now >= until) break;
    if (rc) continue;
    if (alive(r, until, &n, NULL, err)) continue;
    if (n > 0) {
      lonely_since = 0;
    } else if (!lonely_since) {
      lonely_since = now;
    } else if (now - lonely_since > 2 * RQ_HEARTBEAT_TTL_MS) {
      if (cancel_job(r, done, entry, err) == 0) continue; /* its reply came after all */
      return kevo_fail(err, KEVO_E_WORKER,
                       "every kevo worker for %s on %s went away while the job waited; it was "
                       "withdrawn",
                       r->arch, r->conn.url.shown);
    }
  }
  int c = cancel_job(r, done, entry, err);
  if (c == 0) { /* a reply came at the last moment: it is in the list */
    redisReply *rep;
    rc = rq_commandv(&r->conn, rq_now_ms() + CANCEL_WAIT_MS, BLPOP_S * 1000, &rep, err, "BLPOP",
                     reply_key, "1", (char *)NULL);
    if (!rc && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2) {
      rc = take_reply(r, rep->element[1], id, deadline_s, clock0, reply, err);
      freeReplyObject(rep);
      return rc;
    }
    if (!rc) freeReplyObject(rep);
  }
  return kevo_fail(err, KEVO_E_TIMEOUT,
                   "no reply within %.3g s through %s (the job waited for a %s worker and ran): "
                   "it was withdrawn",
                   (double)(rq_now_ms() - start) / 1000, r->conn.url.shown, r->arch);
}

/* ---- as a transport of an evaluator's pool ---- */

static int t_device(void *self, const cJSON **device, kevo_error *err) {
  return evalredis_device(self, device, err);
}

static int t_request(void *self, cJSON *req, const kevo_blob *blobs, size_t nblobs,
                     double deadline_s, kevo_frame *reply, kevo_error *err) {
  return evalredis_request(self, req, blobs, nblobs, deadline_s, reply, err);
}

static evalclient_stats t_stats(const void *self) {
  return evalredis_get_stats(self);
}

static int t_ready(const void *self) {
  (void)self;
  return 1; /* asking for the device starts nothing */
}

static void t_free(void *self) {
  evalredis_free(self);
}

static const eval_transport_ops redis_ops = {"redis", t_device, t_request,
                                             t_stats, t_ready,  t_free};

enum { POOL_REDIS_MAX = 256 }; /* jobs in flight from one evaluator */

/* A transport of a Redis pool: its own connection, labelled by its place. */
static int add_transport(eval_pool *pool, const evalredis_opts *opts, evalredis *r,
                         kevo_error *err) {
  int rc = r ? KEVO_OK : evalredis_new(opts, &r, err);
  if (rc) return rc;
  char label[64];
  snprintf(label, sizeof label, "redis %s #%zu", r->arch, eval_pool_size(pool) + 1);
  eval_transport *t = NULL;
  rc = eval_transport_new(&redis_ops, r, label, "", &t, err);
  return rc ? rc : eval_pool_add(pool, t, err);
}

/* What a pool sized by the live workers needs to grow with them: its options, copied. */
typedef struct redis_grow {
  evalredis_opts opts;
  char *url, *password_env, *arch;
} redis_grow;

static void redis_grow_free(void *arg) {
  redis_grow *g = arg;
  if (!g) return;
  free(g->url), free(g->password_env), free(g->arch);
  free(g);
}

static char *dup_or_null(const char *s) {
  return s ? strdup(s) : NULL;
}

/* eval_pool_grow_fn: one transport more per worker alive now beyond the pool's size (up to
 * POOL_REDIS_MAX), so a worker that joins adds a job in flight from the next batch on. Asks
 * through the first transport's connection: called between batches, none is in use. */
static int redis_grow_pool(void *arg, eval_pool *pool, kevo_error *err) {
  redis_grow *g = arg;
  eval_transport *t0 = eval_pool_at(pool, 0);
  if (!t0) return KEVO_OK;
  long long live = 0;
  int rc = alive(t0->self, rq_now_ms() + 5000, &live, NULL, err);
  if (live > POOL_REDIS_MAX) live = POOL_REDIS_MAX;
  while (!rc && (long long)eval_pool_size(pool) < live)
    rc = add_transport(pool, &g->opts, NULL, err);
  return rc;
}

int eval_pool_redis(const evalredis_opts *opts, int n, eval_pool **out, kevo_error *err) {
  *out = NULL;
  evalredis *first = NULL;
  int rc = evalredis_new(opts, &first, err);
  if (rc) return rc;
  long long live = 0;
  long long deadline = rq_now_ms() + 10000;
  rc = alive(first, deadline, &live, NULL, err);
  if (!rc && live == 0) rc = no_worker(first, deadline, err);
  eval_pool *pool = NULL;
  if (!rc) rc = eval_pool_new(&pool, err);
  if (rc) {
    evalredis_free(first);
    return rc;
  }
  int sized = n <= 0; /* by the live workers: it grows with them */
  if (sized) n = live > POOL_REDIS_MAX ? POOL_REDIS_MAX : (int)live;
  for (int i = 0; !rc && i < n; i++)
    rc = add_transport(pool, opts, i == 0 ? first : NULL, err);
  if (!rc && sized) {
    redis_grow *g = calloc(1, sizeof *g);
    if (g) {
      g->opts = *opts;
      g->opts.url = g->url = dup_or_null(opts->url);
      g->opts.password_env = g->password_env = dup_or_null(opts->password_env);
      g->opts.arch = g->arch = dup_or_null(opts->arch);
    }
    if (!g || (opts->url && !g->url) || (opts->password_env && !g->password_env) ||
        (opts->arch && !g->arch)) {
      redis_grow_free(g);
      rc = kevo_fail(err, KEVO_E_NOMEM, "no memory for a Redis pool");
    } else {
      eval_pool_set_grow(pool, redis_grow_pool, g, redis_grow_free);
    }
  }
  if (rc) {
    eval_pool_free(pool);
    return rc;
  }
  *out = pool;
  return KEVO_OK;
}
