#include "eval_pool.h"

#include <cjson/cJSON.h>

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { POOL_MAX = 1024 }; /* transports in one pool: far past any host's GPUs */

/* ---- a transport ---- */

int eval_transport_new(const eval_transport_ops *ops, void *self, const char *label,
                       const char *gpu, eval_transport **out, kevo_error *err) {
  *out = NULL;
  eval_transport *t = calloc(1, sizeof *t);
  if (!t) {
    if (ops && ops->free) ops->free(self);
    return kevo_fail(err, KEVO_E_NOMEM, "no memory for a worker transport");
  }
  t->ops = ops;
  t->self = self;
  snprintf(t->label, sizeof t->label, "%s", label ? label : ops->kind);
  snprintf(t->gpu, sizeof t->gpu, "%s", gpu ? gpu : "");
  *out = t;
  return KEVO_OK;
}

void eval_transport_free(eval_transport *t) {
  if (!t) return;
  if (t->ops->free) t->ops->free(t->self);
  free(t);
}

/* ---- the local pipe worker ---- */

static int local_device(void *self, const cJSON **device, kevo_error *err) {
  return evalclient_device(self, device, err);
}

static int local_request(void *self, cJSON *req, const kevo_blob *blobs, size_t nblobs,
                         double deadline_s, kevo_frame *reply, kevo_error *err) {
  return evalclient_request(self, req, blobs, nblobs, deadline_s, reply, err);
}

static evalclient_stats local_stats(const void *self) {
  return evalclient_get_stats(self);
}

static int local_ready(const void *self) {
  return evalclient_pid(self) > 0;
}

static void local_free(void *self) {
  evalclient_free(self);
}

static const eval_transport_ops local_ops = {"local",     local_device, local_request,
                                             local_stats, local_ready,  local_free};

int eval_transport_local(const evalclient_opts *o, const char *gpu, eval_transport **out,
                         kevo_error *err) {
  *out = NULL;
  evalclient_opts co = o ? *o : (evalclient_opts){0};
  co.gpu = gpu;
  evalclient *c = NULL;
  int rc = evalclient_new(&co, &c, err);
  if (rc) return rc;
  char label[64];
  snprintf(label, sizeof label, gpu ? "gpu %s" : "local", gpu);
  return eval_transport_new(&local_ops, c, label, gpu, out, err);
}

/* ---- the pool ---- */

/* A transport's own thread: runs one job at a time until told to quit. */
typedef struct pool_thread {
  pthread_t th;
  int started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  void (*fn)(void *, size_t); /* the job; NULL when idle */
  void *arg;
  size_t index;
  int busy, quit;
} pool_thread;

struct eval_pool {
  eval_transport **t;
  pool_thread **th; /* th[i] for t[i], made on the first eval_pool_each */
  size_t n, cap;
  char *kept;             /* eval_pool_local_kept's key: parked on release, not freed */
  eval_pool_grow_fn grow; /* eval_pool_set_grow's, or NULL */
  void *grow_arg;
  void (*grow_free)(void *);
};

static void *pool_thread_main(void *arg) {
  pool_thread *pt = arg;
  pthread_mutex_lock(&pt->mu);
  for (;;) {
    while (!pt->fn && !pt->quit)
      pthread_cond_wait(&pt->cv, &pt->mu);
    if (!pt->fn) break; /* quit with nothing to do */
    void (*fn)(void *, size_t) = pt->fn;
    void *a = pt->arg;
    size_t i = pt->index;
    pthread_mutex_unlock(&pt->mu);
    fn(a, i);
    pthread_mutex_lock(&pt->mu);
    pt->fn = NULL;
    pt->busy = 0;
    pthread_cond_broadcast(&pt->cv);
  }
  pthread_mutex_unlock(&pt->mu);
  return NULL;
}

static pool_thread *thread_of(eval_pool *p, size_t i) {
  if (!p->th[i]) {
    pool_thread *pt = calloc(1, sizeof *pt);
    if (!pt) return NULL;
    pthread_mutex_init(&pt->mu, NULL);
    pthread_cond_init(&pt->cv, NULL);
    if (pthread_create(&pt->th, NULL, pool_thread_main, pt)) {
      pthread_mutex_destroy(&pt->mu);
      pthread_cond_destroy(&pt->cv);
      free(pt);
      return NULL;
    }
    pt->started = 1;
    p->th[i] = pt;
  }
  return p->th[i];
}

static void pool_thread_stop(pool_thread *pt) {
  if (!pt) return;
  pthread_mutex_lock(&pt->mu);
  pt->quit = 1;
  pthread_cond_broadcast(&pt->cv);
  pthread_mutex_unlock(&pt->mu);
  pthread_join(pt->th, NULL);
  pthread_mutex_destroy(&pt->mu);
  pthread_cond_destroy(&pt->cv);
  free(pt);
}

void eval_pool_each(eval_pool *p, size_t n, void (*fn)(void *arg, size_t i), void *arg) {
  if (n > p->n) n = p->n;
  pool_thread **given = calloc(n ? n : 1, sizeof *given);
  for (size_t i = 0; given && i < n; i++) {
    pool_thread *pt = thread_of(p, i);
    if (!pt) continue;
    pthread_mutex_lock(&pt->mu);
    pt->fn = fn, pt->arg = arg, pt->index = i, pt->busy = 1;
    pthread_cond_broadcast(&pt->cv);
    pthread_mutex_unlock(&pt->mu);
    given[i] = pt;
  }
  for (size_t i = 0; i < n; i++)
    if (!given || !given[i]) fn(arg, i); /* no thread: here */
  for (size_t i = 0; given && i < n; i++) {
    pool_thread *pt = given[i];
    if (!pt) continue;
    pthread_mutex_lock(&pt->mu);
    while (pt->busy)
      pthread_cond_wait(&pt->cv, &pt->mu);
    pthread_mutex_unlock(&pt->mu);
  }
  free(given);
}

int eval_pool_new(eval_pool **out, kevo_error *err) {
  *out = calloc(1, sizeof **out);
  return *out ? KEVO_OK : kevo_fail(err, KEVO_E_NOMEM, "no memory for a worker pool");
}

int eval_pool_add(eval_pool *p, eval_transport *t, kevo_error *err) {
  if (p->n == POOL_MAX) {
    eval_transport_free(t);
    return kevo_fail(err, KEVO_E_ARG, "a pool takes at most %d workers", POOL_MAX);
  }
  if (p->n == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 4;
    eval_transport **nt = realloc(p->t, cap * sizeof *nt);
    if (nt) p->t = nt;
    pool_thread **nth = nt ? realloc(p->th, cap * sizeof *nth) : NULL;
    if (!nt || !nth) {
      eval_transport_free(t);
      return kevo_fail(err, KEVO_E_NOMEM, "no memory for a worker pool");
    }
    p->th = nth;
    for (size_t i = p->cap; i < cap; i++)
      p->th[i] = NULL;
    p->cap = cap;
  }
  p->t[p->n++] = t;
  return KEVO_OK;
}

size_t eval_pool_size(const eval_pool *p) {
  return p->n;
}

eval_transport *eval_pool_at(eval_pool *p, size_t i) {
  return i < p->n ? p->t[i] : NULL;
}

void eval_pool_set_grow(eval_pool *p, eval_pool_grow_fn grow, void *arg, void (*free_arg)(void *)) {
  if (p->grow_free) p->grow_free(p->grow_arg);
  p->grow = grow, p->grow_arg = arg, p->grow_free = free_arg;
}

int eval_pool_grow(eval_pool *p, kevo_error *err) {
  return p->grow ? p->grow(p->grow_arg, p, err) : KEVO_OK;
}

void eval_pool_free(eval_pool *p) {
  if (!p) return;
  free(p->kept);
  if (p->grow_free) p->grow_free(p->grow_arg);
  for (size_t i = 0; i < p->n; i++) {
    eval_transport_free(p->t[i]); /* first: its worker dies with the thread that forked it */
    pool_thread_stop(p->th[i]);   /* idle: eval_pool_each waits for its jobs */
  }
  free(p->t);
  free(p->th);
  free(p);
}

evalclient_stats eval_pool_stats(const eval_pool *p) {
  evalclient_stats s = {0};
  for (size_t i = 0; i < p->n; i++) {
    evalclient_stats one = p->t[i]->ops->stats(p->t[i]->self);
    s.spawns += one.spawns;
    s.kills += one.kills;
    s.deaths += one.deaths;
    s.requests += one.requests;
  }
  return s;
}

int eval_pool_list_gpus(const evalclient_opts *o, cJSON **out, kevo_error *err) {
  *out = NULL;
  evalclient *c = NULL;
  evalclient_opts co = o ? *o : (evalclient_opts){0};
  co.gpu = NULL;
  int rc = evalclient_new(&co, &c, err);
  if (rc) return rc;
  cJSON *req = cJSON_CreateObject();
  cJSON_AddStringToObject(req, "op", "devices");
  kevo_frame f = {0};
  rc = evalclient_request(c, req, NULL, 0, co.hello_timeout_s > 0 ? co.hello_timeout_s : 120, &f,
                          err);
  cJSON_Delete(req);
  if (!rc) {
    cJSON *list = cJSON_GetObjectItemCaseSensitive(f.header, "devices");
    const char *e = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f.header, "error"));
    if (cJSON_IsArray(list) && cJSON_GetArraySize(list) > 0)
      *out = cJSON_DetachItemViaPointer(f.header, list);
    else if (cJSON_IsArray(list) || (e && !strncmp(e, "E_NOGPU", 7)))
      rc = kevo_fail(err, KEVO_E_NOGPU, "%s", e ? e : "the worker sees no GPU");
    else
      rc = kevo_fail(err, KEVO_E_WORKER, "the worker did not list its GPUs: %s",
                     e ? e : "no devices in its reply");
    kevo_frame_free(&f);
  }
  evalclient_free(c);
  return rc;
}

/* eval_pool_list_gpus, remembered for the process: a pool for "all" is made for every problem
 * of a suite, and each listing starts a worker (a CUDA context) only to ask. Keyed by the
 * worker command and CUDA_VISIBLE_DEVICES; only a list is remembered, never a failure. */
static int list_gpus_once(const evalclient_opts *o, cJSON **out, kevo_error *err) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static cJSON *list;
  static char *key;
  const char *cmd = o && o->worker_cmd ? o->worker_cmd : getenv("KEVO_WORKER");
  const char *vis = getenv("CUDA_VISIBLE_DEVICES");
  char *k = NULL;
  size_t n = strlen(cmd ? cmd : "") + strlen(vis ? vis : "") + 8;
  if ((k = malloc(n))) snprintf(k, n, "%s|%s|%d", cmd ? cmd : "", vis ? vis : "", vis != NULL);
  pthread_mutex_lock(&mu);
  *out = k && key && !strcmp(k, key) ? cJSON_Duplicate(list, 1) : NULL;
  pthread_mutex_unlock(&mu);
  if (*out) {
    free(k);
    return KEVO_OK;
  }
  int rc = eval_pool_list_gpus(o, out, err);
  pthread_mutex_lock(&mu);
  if (!rc && k) {
    cJSON_Delete(list);
    free(key);
    list = cJSON_Duplicate(*out, 1);
    key = list ? k : NULL;
    k = list ? NULL : k;
  }
  pthread_mutex_unlock(&mu);
  free(k);
  return rc;
}

/* The driver's CUDA_VISIBLE_DEVICES entries (a list the workers' values index into), or 0
 * when it is unset: ordinals are then the values themselves. */
static size_t visible_entries(char ent[][64], size_t cap) {
  const char *v = getenv("CUDA_VISIBLE_DEVICES");
  size_t n = 0;
  if (!v) return 0;
  while (*v && n < cap) {
    size_t len = strcspn(v, ",");
    snprintf(ent[n], 64, "%.*s", (int)(len < 63 ? len : 63), v);
    n++;
    v += len;
    if (*v == ',') v++;
  }
  return n;
}

/* Parses "0,2,3" into ordinals (at most cap); KEVO_E_ARG when malformed or repeated. */
static int parse_ordinals(const char *spec, int *ord, size_t cap, size_t *n, kevo_error *err) {
  *n = 0;
  const char *p = spec;
  while (*p) {
    if (!isdigit((unsigned char)*p))
      return kevo_fail(err, KEVO_E_ARG,
                       "--gpus takes all or GPU numbers separated by commas (0,2,3), got '%s'",
                       spec);
    char *end;
    long v = strtol(p, &end, 10);
    if (v > 4095 || *n == cap)
      return kevo_fail(err, KEVO_E_ARG, "--gpus '%s': too many or too large", spec);
    for (size_t i = 0; i < *n; i++)
      if (ord[i] == v) return kevo_fail(err, KEVO_E_ARG, "--gpus '%s': GPU %ld twice", spec, v);
    ord[(*n)++] = (int)v;
    p = end;
    if (*p == ',' && p[1])
      p++;
    else if (*p)
      return kevo_fail(err, KEVO_E_ARG,
                       "--gpus takes all or GPU numbers separated by commas (0,2,3), got '%s'",
                       spec);
  }
  if (!*n) return kevo_fail(err, KEVO_E_ARG, "--gpus is empty");
  return KEVO_OK;
}

int eval_pool_local(const char *spec, const evalclient_opts *o, eval_pool **out, kevo_error *err) {
  *out = NULL;
  eval_pool *p = NULL;
  int rc = eval_pool_new(&p, err);
  if (rc) return rc;
  if (!spec || !*spec) { /* one worker, the driver's own GPU setting: as before pools */
    eval_transport *t = NULL;
    rc = eval_transport_local(o, NULL, &t, err);
    if (!rc) rc = eval_pool_add(p, t, err);
    goto done;
  }
  size_t n = 0;
  int *ords = calloc(POOL_MAX, sizeof *ords);
  if (!ords) {
    rc = kevo_fail(err, KEVO_E_NOMEM, "no memory for a worker pool");
    goto done;
  }
  if (!strcmp(spec, "all")) {
    cJSON *list = NULL;
    rc = list_gpus_once(o, &list, err);
    if (rc) {
      free(ords);
      goto done;
    }
    const cJSON *d;
    cJSON_ArrayForEach(d, list) {
      if (n < POOL_MAX) ords[n++] = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(d, "index"));
    }
    cJSON_Delete(list);
  } else if ((rc = parse_ordinals(spec, ords, POOL_MAX, &n, err))) {
    free(ords);
    goto done;
  }
  char vis[64][64];
  size_t nvis = visible_entries(vis, 64);
  for (size_t i = 0; !rc && i < n; i++) {
    char gpu[64];
    if (nvis && (size_t)ords[i] >= nvis) {
      rc = kevo_fail(err, KEVO_E_ARG,
                     "--gpus %s: GPU %d is not among the %zu this kevo sees "
                     "(CUDA_VISIBLE_DEVICES=%s)",
                     spec, ords[i], nvis, getenv("CUDA_VISIBLE_DEVICES"));
      break;
    }
    if (nvis)
      snprintf(gpu, sizeof gpu, "%s", vis[ords[i]]);
    else
      snprintf(gpu, sizeof gpu, "%d", ords[i]);
    eval_transport *t = NULL;
    rc = eval_transport_local(o, gpu, &t, err);
    if (!rc) rc = eval_pool_add(p, t, err);
  }
  free(ords);
done:
  if (rc) {
    eval_pool_free(p);
    return rc;
  }
  *out = p;
  return KEVO_OK;
}

/* ---- every device at once ---- */

typedef struct hello_job {
  eval_transport *t;
  const cJSON *dev;
  int rc;
  kevo_error err;
} hello_job;

static void hello_main(void *arg, size_t i) {
  hello_job *j = (hello_job *)arg + i;
  j->rc = j->t->ops->device(j->t->self, &j->dev, &j->err);
}

static void model_of(const cJSON *dev, char *out, size_t cap) {
  const cJSON *cc = cJSON_GetObjectItem(dev, "cc");
  const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(dev, "name"));
  snprintf(out, cap, "%s (sm_%d%d)", name ? name : "?",
           (int)cJSON_GetNumberValue(cJSON_GetArrayItem(cc, 0)),
           (int)cJSON_GetNumberValue(cJSON_GetArrayItem(cc, 1)));
}

int eval_pool_devices(eval_pool *p, const cJSON **first, kevo_error *err) {
  *first = NULL;
  if (!p->n) return kevo_fail(err, KEVO_E_ARG, "the pool has no worker");
  hello_job *jobs = calloc(p->n, sizeof *jobs);
  if (!jobs) return kevo_fail(err, KEVO_E_NOMEM, "no memory to greet %zu workers", p->n);
  size_t ready = 0;
  for (size_t i = 0; i < p->n; i++) {
    jobs[i].t = p->t[i];
    ready += p->t[i]->ops->ready && p->t[i]->ops->ready(p->t[i]->self);
  }
  if (ready == p->n) /* every device known already: no worker starts */
    for (size_t i = 0; i < p->n; i++)
      hello_main(jobs, i);
  else /* on each transport's own thread: a worker started there lives with the pool */
    eval_pool_each(p, p->n, hello_main, jobs);
  int rc = KEVO_OK;
  for (size_t i = 0; i < p->n && !rc; i++)
    if (jobs[i].rc) {
      rc = jobs[i].rc;
      *err = jobs[i].err;
      kevo_fail_prefix(err, "%s: ", p->t[i]->label);
    }
  char want[300], have[300];
  if (!rc) model_of(jobs[0].dev, want, sizeof want);
  for (size_t i = 1; i < p->n && !rc; i++) {
    model_of(jobs[i].dev, have, sizeof have);
    if (strcmp(want, have))
      rc = kevo_fail(err, KEVO_E_ARG,
                     "GPUs of two models in one pool: %s is %s, %s is %s. A speed-up is only "
                     "compared with others measured on the same model: give --gpus the GPUs of "
                     "one model (kevo doctor lists them)",
                     p->t[0]->label, want, p->t[i]->label, have);
  }
  if (!rc) *first = jobs[0].dev;
  free(jobs);
  return rc;
}

/* ---- a pool kept for the next evaluator ---- */

static pthread_mutex_t parked_mu = PTHREAD_MUTEX_INITIALIZER;
static eval_pool *parked; /* at most one, with its key in parked->kept */

static char *kept_key(const char *spec, const evalclient_opts *o) {
  const char *cmd = o && o->worker_cmd ? o->worker_cmd : getenv("KEVO_WORKER");
  const char *vis = getenv("CUDA_VISIBLE_DEVICES");
  size_t n = strlen(spec ? spec : "") + strlen(cmd ? cmd : "") + strlen(vis ? vis : "") + 64;
  char *k = malloc(n);
  if (k)
    snprintf(k, n, "%s|%s|%s|%d|%g", spec ? spec : "", cmd ? cmd : "", vis ? vis : "", vis != NULL,
             o ? o->hello_timeout_s : 0);
  return k;
}

int eval_pool_local_kept(const char *spec, const evalclient_opts *o, eval_pool **out,
                         kevo_error *err) {
  *out = NULL;
  char *key = kept_key(spec, o);
  if (!key) return kevo_fail(err, KEVO_E_NOMEM, "no memory for a worker pool");
  pthread_mutex_lock(&parked_mu);
  if (parked && !strcmp(parked->kept, key)) {
    *out = parked;
    parked = NULL;
  }
  pthread_mutex_unlock(&parked_mu);
  if (*out) {
    free(key);
    return KEVO_OK;
  }
  int rc = eval_pool_local(spec, o, out, err);
  if (rc) {
    free(key);
    return rc;
  }
  (*out)->kept = key;
  return KEVO_OK;
}

void eval_pool_release(eval_pool *p) {
  if (!p || !p->kept) {
    eval_pool_free(p);
    return;
  }
  pthread_mutex_lock(&parked_mu);
  eval_pool *old = parked;
  parked = p;
  pthread_mutex_unlock(&parked_mu);
  eval_pool_free(old);
}
