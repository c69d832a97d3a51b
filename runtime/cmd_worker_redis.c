/* kevo worker --redis: a GPU host's bridge between the Redis job queue (redis_queue.h) and one
 * local GPU worker (docs/redis.md). `kevo worker` hands its command line here when it sees
 * --redis, so the GPU worker's own files stay apart from the driver's (ctest style/layers).
 *
 * The bridge starts a `kevo worker` child on its GPU through eval_client (which kills it at a
 * job's deadline and replaces it after a crash), asks its device, and takes jobs from the
 * stream of that device's architecture as consumer <host>:<gpu>:<pid> of group "workers":
 *   1. a job another worker took and left idle past the claim timeout (XAUTOCLAIM), else the
 *      next new one (XREADGROUP, 1 s at a time);
 *   2. a job already answered or withdrawn (its done marker) is dropped; one delivered more
 *      than --max-tries times fails with the names of the workers that took it;
 *   3. the request goes to the child with the job's deadline; its reply, or what went wrong,
 *      is the job's outcome: written once (the first outcome wins), acknowledged, deleted.
 * A second thread beats every second on its own connection: it marks the worker alive for
 * its architecture and keeps the job in hand from looking idle, so only a worker that is gone
 * loses its job. The link to Redis comes back by itself, and an outcome waits for it. */
#include "eval_client.h"
#include "redis_queue.h"
#include "registry.h"

#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OUTCOME_WAIT_MS = 600000, DEFAULT_CLAIM_S = 15, DEFAULT_MAX_TRIES = 3 };

static volatile sig_atomic_t stopping;

static void on_stop(int sig) {
  (void)sig;
  stopping = 1;
}

typedef struct bridge {
  rq_url url;
  rq_conn conn; /* the job loop's */
  char arch[32], consumer[RQ_NAME_MAX], stream[64], workers[64], devices[64];
  char *device; /* the hello's device, with "host" and "worker" added (JSON text) */
  char gpu[192], pci_bus[64], host[128]; /* what names the GPU in a result's device */
  long long claim_ms;
  int max_tries, verbose;
  evalclient *child;
  /* shared with the heartbeat thread */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int quit;
  char holding[64]; /* the entry id of the job in hand, "" when none */
} bridge;

/* EVAL on conn: script, keys then arguments (all strings; lens NULL: strlen). */
static int eval_script(rq_conn *c, const char *script, int nkeys, const char **kv, int n,
                       const size_t *lens, long long deadline, redisReply **out, kevo_error *err) {
  const char *argv[16];
  size_t al[16];
  char nk[8];
  snprintf(nk, sizeof nk, "%d", nkeys);
  int a = 0;
  argv[a] = "EVAL", al[a++] = 4;
  argv[a] = script, al[a++] = strlen(script);
  argv[a] = nk, al[a++] = strlen(nk);
  for (int i = 0; i < n && a < 16; i++)
    argv[a] = kv[i], al[a++] = lens && lens[i] ? lens[i] : strlen(kv[i]);
  return rq_command(c, a, argv, al, deadline, 0, NULL, out, err);
}

static void *heartbeat(void *arg) {
  bridge *b = arg;
  rq_conn hb;
  kevo_error err;
  int connected = !rq_connect(&hb, &b->url, 5000, &err);
  char ttl[16];
  snprintf(ttl, sizeof ttl, "%d", RQ_HEARTBEAT_TTL_MS);
  pthread_mutex_lock(&b->mu);
  while (!b->quit) {
    char holding[64];
    snprintf(holding, sizeof holding, "%s", b->holding);
    pthread_mutex_unlock(&b->mu);
    if (!connected) connected = !rq_connect(&hb, &b->url, 5000, &err);
    redisReply *r;
    const char *kv[] = {b->workers, b->devices, b->consumer, ttl, b->device};
    long long deadline = rq_now_ms() + RQ_HEARTBEAT_MS;
    if (connected && !eval_script(&hb, RQ_LUA_HEARTBEAT, 2, kv, 5, NULL, deadline, &r, &err))
      freeReplyObject(r);
    if (connected && holding[0] &&
        !rq_commandv(&hb, deadline, 0, &r, &err, "XCLAIM", b->stream, RQ_GROUP, b->consumer, "0",
                     holding, "JUSTID", (char *)NULL))
      freeReplyObject(r); /* its idle time starts again: nobody claims a job in good hands */
    pthread_mutex_lock(&b->mu);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += (long)RQ_HEARTBEAT_MS * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    if (!b->quit) pthread_cond_timedwait(&b->cv, &b->mu, &until);
  }
  pthread_mutex_unlock(&b->mu);
  if (connected) {
    const char *kv[] = {b->workers, b->devices, b->consumer};
    redisReply *r;
    if (!eval_script(&hb, RQ_LUA_LEAVE, 2, kv, 3, NULL, rq_now_ms() + 1000, &r, &err))
      freeReplyObject(r);
  }
  rq_close(&hb);
  return NULL;
}

static void set_holding(bridge *b, const char *entry) {
  pthread_mutex_lock(&b->mu);
  snprintf(b->holding, sizeof b->holding, "%s", entry ? entry : "");
  pthread_mutex_unlock(&b->mu);
}

/* A job's fields, pointing into the stream entry's reply. */
typedef struct job {
  const char *id, *entry;
  const char *header;
  size_t header_len;
  long long run_ms, queue_ms;
  size_t nblobs;
  kevo_blob blobs[KEVO_PROTO_MAX_BLOBS];
} job;

static int read_job(const redisReply *entry, job *j) {
  memset(j, 0, sizeof *j);
  if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 2) return -1;
  j->entry = entry->element[0]->str;
  const redisReply *f = entry->element[1];
  if (f->type != REDIS_REPLY_ARRAY) return -1;
  for (size_t i = 0; i + 1 < f->elements; i += 2) {
    const char *k = f->element[i]->str;
    const redisReply *v = f->element[i + 1];
    if (!k || v->type != REDIS_REPLY_STRING) return -1;
    if (!strcmp(k, "job")) {
      j->id = v->str;
    } else if (!strcmp(k, "header")) {
      j->header = v->str, j->header_len = v->len;
    } else if (!strcmp(k, "run_ms")) {
      j->run_ms = atoll(v->str);
    } else if (!strcmp(k, "queue_ms")) {
      j->queue_ms = atoll(v->str);
    } else if (k[0] == 'b' && k[1] >= '0' && k[1] <= '9') {
      long i_blob = strtol(k + 1, NULL, 10);
      if (i_blob < 0 || i_blob >= KEVO_PROTO_MAX_BLOBS) return -1;
      j->blobs[i_blob] = (kevo_blob){v->str, v->len};
      if ((size_t)i_blob + 1 > j->nblobs) j->nblobs = (size_t)i_blob + 1;
    }
  }
  return j->id && j->header && strlen(j->id) == 32 ? 0 : -1;
}

/* Writes the job's outcome (the first one wins), acknowledges and deletes it. Waits for Redis
 * up to OUTCOME_WAIT_MS: a result is not thrown away over a server restart. */
static void finish(bridge *b, const job *j, cJSON *header, const kevo_blob *blobs, size_t nblobs) {
  char done[64], reply[64], ttl[16];
  rq_key(done, sizeof done, "done", j->id);
  rq_key(reply, sizeof reply, "reply", j->id);
  snprintf(ttl, sizeof ttl, "%d", RQ_RESULT_TTL_S);
  cJSON_AddStringToObject(header, "by", b->consumer);
  char *frame = NULL;
  size_t len = 0;
  kevo_error err = {0};
  if (rq_frame_encode(header, blobs, nblobs, &frame, &len, &err)) {
    fprintf(stderr, "kevo worker: job %s: %s\n", j->id, err.msg);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "kevo_error", "E_WORKER");
    cJSON_AddStringToObject(e, "message", err.msg);
    if (rq_frame_encode(e, NULL, 0, &frame, &len, &err)) frame = NULL;
    cJSON_Delete(e);
    if (!frame) return;
  }
  const char *kv[] = {done, reply, b->stream, frame, ttl, RQ_GROUP, j->entry};
  size_t lens[] = {0, 0, 0, len, 0, 0, 0};
  redisReply *r;
  if (eval_script(&b->conn, RQ_LUA_COMPLETE, 3, kv, 7, lens, rq_now_ms() + OUTCOME_WAIT_MS, &r,
                  &err)) {
    fprintf(stderr, "kevo worker: job %s: its outcome was lost: %s\n", j->id, err.msg);
  } else {
    if (b->verbose || (r->type == REDIS_REPLY_INTEGER && r->integer == 0))
      fprintf(stderr, "kevo worker: job %s %s\n", j->id,
              r->integer ? "answered" : "was answered already: this outcome is dropped");
    freeReplyObject(r);
  }
  free(frame);
}

static void fail_job(bridge *b, const job *j, const char *code, const char *msg, int death) {
  cJSON *h = cJSON_CreateObject();
  cJSON_AddStringToObject(h, "kevo_error", code);
  cJSON_AddStringToObject(h, "message", msg);
  if (death) cJSON_AddBoolToObject(h, "death", 1);
  finish(b, j, h, NULL, 0);
  cJSON_Delete(h);
}

/* Step 2 (one round trip): records us among the job's takers; 1 when the job is to be dropped
 * or was failed. */
static int screen(bridge *b, const job *j) {
  char done[64], tries[64], max[16];
  rq_key(done, sizeof done, "done", j->id);
  rq_key(tries, sizeof tries, "tries", j->id);
  snprintf(max, sizeof max, "%d", b->max_tries);
  kevo_error err;
  redisReply *r;
  const char *kv[] = {done, tries, b->stream, RQ_GROUP, j->entry, b->consumer, max};
  if (eval_script(&b->conn, RQ_LUA_SCREEN, 3, kv, 7, NULL, rq_now_ms() + 30000, &r, &err)) {
    fprintf(stderr, "kevo worker: job %s: %s\n", j->id, err.msg);
    return 1; /* it stays pending: claimed again later */
  }
  long long verdict = -1, deliveries = 1, now = 0;
  if (r->type == REDIS_REPLY_ARRAY && r->elements >= 3) {
    verdict = r->element[0]->integer;
    deliveries = r->element[1]->integer;
    now = r->element[2]->integer;
  }
  if (verdict == 1 || verdict < 0) { /* answered or withdrawn: its entry is gone now */
    freeReplyObject(r);
    return 1;
  }
  if (verdict == 2) {
    char msg[1536], who[1024] = "";
    size_t used = 0;
    const redisReply *list = r->elements >= 4 ? r->element[3] : NULL;
    for (size_t i = 0; list && i < list->elements && used + 2 < sizeof who; i++)
      used += (size_t)snprintf(who + used, sizeof who - used, "%s%s", i ? ", " : "",
                               list->element[i]->str ? list->element[i]->str : "?");
    snprintf(msg, sizeof msg,
             "the job was taken %lld times by workers that stopped before answering (%s): it is "
             "failed rather than tried again (a kernel that takes its host down, or workers "
             "being restarted)",
             deliveries - 1, who[0] ? who : "unknown");
    freeReplyObject(r);
    fail_job(b, j, "E_WORKER", msg, 1);
    return 1;
  }
  freeReplyObject(r);
  long long age = now - atoll(j->entry); /* an entry id starts with its server time, ms */
  if (j->run_ms > 0 && now && age > j->queue_ms + j->run_ms + RQ_HOP_MARGIN_MS) {
    /* a job its driver stopped waiting for (the driver died): not worth a GPU's time */
    char msg[256];
    snprintf(msg, sizeof msg, "the job waited %.0f s, past its driver's deadline: dropped",
             (double)age / 1000);
    fail_job(b, j, "E_TIMEOUT", msg, 0);
    return 1;
  }
  return 0;
}

/* An evaluation's device object (which replaces the driver's) names the GPU and the worker
 * that measured it, as a local pool's results do (docs/redis.md): device.gpu "HOST:N" (the GPU
 * across hosts), device.pci_bus, device.host and device.worker (this bridge's consumer name). */
static void name_device(const bridge *b, cJSON *header) {
  cJSON *d = cJSON_GetObjectItemCaseSensitive(header, "device");
  if (!cJSON_IsObject(d)) return;
  const char *keys[] = {"gpu", "pci_bus", "host", "worker"};
  const char *vals[] = {b->gpu, b->pci_bus, b->host, b->consumer};
  for (int i = 0; i < 4; i++) {
    cJSON_DeleteItemFromObjectCaseSensitive(d, keys[i]);
    if (vals[i][0]) cJSON_AddStringToObject(d, keys[i], vals[i]);
  }
}

/* Step 3: the request to the child, its reply or failure as the job's outcome. */
static void run_job(bridge *b, const job *j) {
  cJSON *req = cJSON_ParseWithLength(j->header, j->header_len);
  const char *op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "op"));
  if (!op || (strcmp(op, "evaluate") && strcmp(op, "inputs") && strcmp(op, "put_reference"))) {
    fail_job(b, j, "E_PARSE", "a job must be an evaluate, inputs or put_reference request", 0);
    cJSON_Delete(req);
    return;
  }
  cJSON_DeleteItemFromObjectCaseSensitive(req, "blobs");
  set_holding(b, j->entry);
  kevo_frame rep;
  kevo_error err = {0};
  evalclient_stats before = evalclient_get_stats(b->child);
  double t0 = rq_clock_ms();
  int rc =
      evalclient_request(b->child, req, j->blobs, j->nblobs, (double)j->run_ms / 1000, &rep, &err);
  double took = rq_clock_ms() - t0;
  if (b->verbose)
    fprintf(stderr, "kevo worker: job %s (%s): %s in %.1f ms\n", j->id, op,
            rc ? kevo_code(rc) : "replied", took);
  if (rc) {
    int died = evalclient_get_stats(b->child).deaths > before.deaths;
    fail_job(b, j, kevo_code(rc), err.msg, died);
  } else {
    cJSON_DeleteItemFromObjectCaseSensitive(rep.header, "id");
    cJSON_AddNumberToObject(rep.header, "worker_ms", took); /* KEVO_REDIS_TRACE */
    name_device(b, rep.header);
    finish(b, j, rep.header, rep.blobs, rep.nblobs);
    kevo_frame_free(&rep);
  }
  set_holding(b, NULL);
  cJSON_Delete(req);
}

/* Step 1: the next job, claimed or new. *out is the reply holding it (caller frees) and
 * *entry points into it; KEVO_OK with *out NULL when none came within a second. */
static int next_job(bridge *b, redisReply **out, const redisReply **entry, kevo_error *err) {
  *out = NULL;
  *entry = NULL;
  char idle[24];
  snprintf(idle, sizeof idle, "%lld", b->claim_ms);
  redisReply *r;
  long long deadline = rq_now_ms() + 60000;
  int rc = rq_commandv(&b->conn, deadline, 0, &r, err, "XAUTOCLAIM", b->stream, RQ_GROUP,
                       b->consumer, idle, "0-0", "COUNT", "1", (char *)NULL);
  if (rc) return rc;
  if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2 && r->element[1]->elements > 0 &&
      r->element[1]->element[0]->type == REDIS_REPLY_ARRAY) {
    *out = r;
    *entry = r->element[1]->element[0];
    fprintf(stderr, "kevo worker: claimed job entry %s that a gone worker held\n",
            (*entry)->element[0]->str);
    return KEVO_OK;
  }
  freeReplyObject(r);
  rc = rq_commandv(&b->conn, deadline, 1000, &r, err, "XREADGROUP", "GROUP", RQ_GROUP, b->consumer,
                   "COUNT", "1", "BLOCK", "1000", "STREAMS", b->stream, ">", (char *)NULL);
  if (rc) return rc;
  if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 && r->element[0]->elements == 2 &&
      r->element[0]->element[1]->elements > 0) {
    *out = r;
    *entry = r->element[0]->element[1]->element[0];
    return KEVO_OK;
  }
  freeReplyObject(r);
  return KEVO_OK;
}

static int serve(bridge *b) {
  kevo_error err = {0};
  while (!stopping) {
    redisReply *r;
    const redisReply *entry;
    b->conn.stop = &stopping; /* no job in hand: a stop need not wait for Redis to come back */
    int rc = next_job(b, &r, &entry, &err);
    b->conn.stop = NULL;
    if (rc == KEVO_E_WORKER && strstr(err.msg, "NOGROUP")) { /* the stream was deleted */
      rc = rq_ensure_group(&b->conn, b->stream, rq_now_ms() + 60000, &err);
      if (!rc) continue;
    }
    if (rc) {
      fprintf(stderr, "kevo worker: %s\n", err.msg);
      if (rc == KEVO_E_ARG) return KEVO_EXIT_FAILED;
      continue; /* Redis is away: rq_command waited a minute; wait again */
    }
    if (!r) continue;
    job j;
    if (read_job(entry, &j)) {
      fprintf(stderr, "kevo worker: dropped a malformed job entry %s\n", entry->element[0]->str);
      redisReply *x;
      if (!rq_commandv(&b->conn, rq_now_ms() + 10000, 0, &x, &err, "XACK", b->stream, RQ_GROUP,
                       entry->element[0]->str, (char *)NULL))
        freeReplyObject(x);
    } else if (!screen(b, &j)) {
      run_job(b, &j);
    }
    freeReplyObject(r);
  }
  return KEVO_EXIT_OK;
}

static const char usage[] =
    "usage: kevo worker --redis redis://[user@]host[:port][/db] [--password-env VAR]\n"
    "                   [--device N] [--arch sm_NN] [--claim-s S] [--max-tries N] [-v]\n";

/* The device as the heartbeat publishes it: the hello's, with where it is. */
static char *published_device(const cJSON *dev, const char *consumer) {
  cJSON *d = cJSON_Duplicate(dev, 1);
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  cJSON_AddStringToObject(d, "host", host);
  cJSON_AddStringToObject(d, "worker", consumer);
  char *text = cJSON_PrintUnformatted(d);
  cJSON_Delete(d);
  return text;
}

static int bridge_main(int argc, char **argv) {
  const char *url = NULL, *password_env = NULL, *device = NULL, *arch = NULL;
  double claim_s = DEFAULT_CLAIM_S;
  int max_tries = DEFAULT_MAX_TRIES, verbose = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-v")) {
      verbose = 1;
      continue;
    }
    if (!v) {
      fprintf(stderr, "kevo worker: %s needs a value\n%s", a, usage);
      return KEVO_EXIT_USAGE;
    }
    i++;
    if (!strcmp(a, "--redis"))
      url = v;
    else if (!strcmp(a, "--password-env"))
      password_env = v;
    else if (!strcmp(a, "--device"))
      device = v;
    else if (!strcmp(a, "--arch"))
      arch = v;
    else if (!strcmp(a, "--claim-s"))
      claim_s = atof(v);
    else if (!strcmp(a, "--max-tries"))
      max_tries = atoi(v);
    else {
      fprintf(stderr, "kevo worker: unknown option %s\n%s", a, usage);
      return KEVO_EXIT_USAGE;
    }
  }
  if (claim_s < 2.0 * RQ_HEARTBEAT_MS / 1000 || max_tries < 1) {
    fprintf(stderr, "kevo worker: --claim-s must be at least %d, --max-tries at least 1\n",
            2 * RQ_HEARTBEAT_MS / 1000);
    return KEVO_EXIT_USAGE;
  }
  static bridge b; /* the signal handler's flag is global anyway; one bridge per process */
  memset(&b, 0, sizeof b);
  kevo_error err = {0};
  if (rq_url_parse(url, password_env, &b.url, &err)) {
    fprintf(stderr, "kevo worker: --redis: %s\n", err.msg);
    return KEVO_EXIT_USAGE;
  }
  b.claim_ms = (long long)(claim_s * 1000);
  b.max_tries = max_tries;
  b.verbose = verbose;
  struct sigaction sa = {.sa_handler = on_stop};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  evalclient_opts co = {.gpu = device};
  const cJSON *dev = NULL;
  int rc = evalclient_new(&co, &b.child, &err);
  if (!rc) rc = evalclient_device(b.child, &dev, &err);
  if (rc) {
    fprintf(stderr, "kevo worker: the GPU%s%s: %s\n", device ? " " : "", device ? device : "",
            err.msg);
    evalclient_free(b.child);
    return KEVO_EXIT_FAILED;
  }
  const cJSON *cc = cJSON_GetObjectItemCaseSensitive(dev, "cc");
  char own[32] = "?";
  if (cJSON_IsArray(cc) && cJSON_GetArraySize(cc) == 2)
    snprintf(own, sizeof own, "sm_%d%d", (int)cJSON_GetArrayItem(cc, 0)->valuedouble,
             (int)cJSON_GetArrayItem(cc, 1)->valuedouble);
  if (rq_arch_base(arch ? arch : own, b.arch, sizeof b.arch, &err)) {
    fprintf(stderr, "kevo worker: the device's architecture: %s\n", err.msg);
    evalclient_free(b.child);
    return KEVO_EXIT_FAILED;
  }
  gethostname(b.host, sizeof b.host - 1);
  snprintf(b.consumer, sizeof b.consumer, "%s:%s:%d", b.host, device ? device : "-", (int)getpid());
  /* without --device the child has this process's CUDA_VISIBLE_DEVICES: its first GPU */
  const char *vis = getenv("CUDA_VISIBLE_DEVICES");
  char first[64] = "0";
  if (!device && vis && *vis) snprintf(first, sizeof first, "%.*s", (int)strcspn(vis, ","), vis);
  snprintf(b.gpu, sizeof b.gpu, "%s:%s", b.host, device ? device : first);
  const char *bus = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(dev, "pci_bus"));
  snprintf(b.pci_bus, sizeof b.pci_bus, "%s", bus ? bus : "");
  rq_key(b.stream, sizeof b.stream, "jobs", b.arch);
  rq_key(b.workers, sizeof b.workers, "workers", b.arch);
  rq_key(b.devices, sizeof b.devices, "devices", b.arch);
  b.device = published_device(dev, b.consumer);
  rc = rq_connect(&b.conn, &b.url, 5000, &err);
  if (!rc) rc = rq_ensure_group(&b.conn, b.stream, rq_now_ms() + 5000, &err);
  if (rc) {
    fprintf(stderr, "kevo worker: %s\n", err.msg);
    evalclient_free(b.child);
    free(b.device);
    rq_close(&b.conn);
    return KEVO_EXIT_FAILED;
  }
  pthread_mutex_init(&b.mu, NULL);
  pthread_cond_init(&b.cv, NULL);
  pthread_t hb;
  pthread_create(&hb, NULL, heartbeat, &b);
  fprintf(stderr, "kevo worker: %s (%s) takes %s jobs from %s as %s\n",
          cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(dev, "name")), own, b.arch,
          b.url.shown, b.consumer);
  rc = serve(&b);
  pthread_mutex_lock(&b.mu);
  b.quit = 1;
  pthread_cond_signal(&b.cv);
  pthread_mutex_unlock(&b.mu);
  pthread_join(hb, NULL);
  evalclient_free(b.child);
  rq_close(&b.conn);
  free(b.device);
  return rc;
}

const struct kevo_command kevo_cmd_worker_redis = {
    "worker-redis", "a GPU host's worker that takes jobs from Redis (kevo worker --redis)",
    "usage: kevo worker --redis redis://[user@]host[:port][/db] [--password-env VAR]\n"
    "                   [--device N] [--arch sm_NN] [--claim-s S] [--max-tries N] [-v]\n\n"
    "Takes evaluation jobs from Redis and runs each on this host's GPU N through a local\n"
    "`kevo worker` (docs/redis.md). Run one per GPU. --password-env names the environment\n"
    "variable that holds the Redis password (keep it off command lines). --arch: the job\n"
    "stream to serve (default: the GPU's own). --claim-s: how long a job held by a worker\n"
    "that stopped beating waits before another takes it (15). --max-tries: deliveries before\n"
    "a job is failed (3). Stops after the job in hand on SIGTERM or Ctrl-C.\n",
    bridge_main, 1};
