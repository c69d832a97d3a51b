/* Evaluation through Redis (runtime/eval_redis.c, cmd_worker_redis.c) against a real
 * redis-server and real `kevo worker --redis` bridges whose GPU work is a fake worker
 * (tests/integration/fake_worker.py, through $KEVO_WORKER). The fault tests of docs/redis.md:
 * no worker alive, a worker of another architecture, an oversized job, a slow worker that
 * keeps its job, a deadline, a worker killed mid-job (the job completes exactly once, on
 * another worker), a job retried too often, a wrong password, a Redis restart mid-job.
 *
 * Needs $KEVO_TEST_REDIS (redis://127.0.0.1:PORT, a server these tests may flush databases
 * 1-6 of; .ci/run starts one) and, for the password and restart cases, a redis-server binary
 * ($KEVO_REDIS_SERVER or on PATH) to start private servers. Skips loudly (77) without them. */
#include "check.h"
#include "eval_redis.h"
#include "redis_queue.h"

#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmp[] = "/tmp/kevo-evalredis-XXXXXX";
static const char *kevo_bin, *src_root;
static rq_url base;

static void sleep_ms(int ms) {
  usleep((useconds_t)ms * 1000);
}

static void url_for(char *out, size_t cap, const rq_url *u, int db) {
  snprintf(out, cap, "redis://%s:%d/%d", u->host, u->port, db);
}

/* Empties database db of the server at u. */
static void flush_db(const rq_url *u, int db) {
  rq_url x = *u;
  x.db = db;
  rq_conn c;
  kevo_error err;
  CHECK(rq_connect(&c, &x, 2000, &err) == KEVO_OK);
  redisReply *r;
  if (!rq_commandv(&c, rq_now_ms() + 2000, 0, &r, &err, "FLUSHDB", (char *)NULL))
    freeReplyObject(r);
  rq_close(&c);
}

/* Starts `kevo worker --redis url ...` over a fake worker. env: "NAME=value" entries for the
 * bridge (and so its fake worker), NULL-terminated. Its stderr goes to tmp/bridge-<n>.log. */
static pid_t start_bridge(const char *url, const char *mode, const char *const *env,
                          const char *const *extra) {
  static int n;
  char fake[1024], log[1024];
  snprintf(fake, sizeof fake, "python3 %s/tests/integration/fake_worker.py %s", src_root, mode);
  snprintf(log, sizeof log, "%s/bridge-%d.log", tmp, n++);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("KEVO_WORKER", fake, 1);
    for (; env && *env; env++)
      putenv((char *)*env);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) dup2(fd, 2);
    const char *argv[16] = {"kevo", "worker", "--redis", url, "--claim-s", "2"};
    int a = 6;
    for (; extra && *extra && a < 15; extra++)
      argv[a++] = *extra;
    argv[a] = NULL;
    execv(kevo_bin, (char **)argv);
    _exit(127);
  }
  return pid;
}

static void stop_bridge(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

static evalredis *driver(const char *url, size_t max_payload) {
  evalredis_opts o = {.url = url, .arch = "sm_90", .queue_s = 20, .max_payload = max_payload};
  evalredis *r = NULL;
  kevo_error err = {0};
  int rc = evalredis_new(&o, &r, &err);
  if (rc) fprintf(stderr, "evalredis_new: %s\n", err.msg);
  CHECK(rc == KEVO_OK);
  return r;
}

/* Waits until a worker for sm_90 is alive (true) or 15 s pass. */
static int wait_alive(evalredis *r) {
  for (int i = 0; i < 150; i++) {
    const cJSON *dev;
    kevo_error err;
    if (evalredis_device(r, &dev, &err) == KEVO_OK) return 1;
    sleep_ms(100);
  }
  return 0;
}

/* An evaluate request with one 4 KiB blob; *by gets the worker that answered (or ""). */
static int request(evalredis *r, double deadline_s, char *by, size_t cap, kevo_error *err) {
  static char blob[4096];
  cJSON *req = cJSON_CreateObject();
  cJSON_AddStringToObject(req, "op", "evaluate");
  kevo_blob b = {blob, sizeof blob};
  kevo_frame reply;
  int rc = evalredis_request(r, req, &b, 1, deadline_s, &reply, err);
  cJSON_Delete(req);
  if (by) by[0] = '\0';
  if (!rc) {
    const char *w = cJSON_GetStringValue(cJSON_GetObjectItem(reply.header, "by"));
    if (by && w) snprintf(by, cap, "%s", w);
    /* the result names the worker and its GPU (HOST:N), not the driver's idea of one */
    const cJSON *d = cJSON_GetObjectItem(reply.header, "device");
    const char *dw = cJSON_GetStringValue(cJSON_GetObjectItem(d, "worker"));
    const char *dg = cJSON_GetStringValue(cJSON_GetObjectItem(d, "gpu"));
    const char *dh = cJSON_GetStringValue(cJSON_GetObjectItem(d, "host"));
    CHECK(w && dw && !strcmp(w, dw));
    CHECK(dg && dh && !strncmp(dg, dh, strlen(dh)) && dg[strlen(dh)] == ':');
    CHECK(cJSON_GetObjectItem(reply.header, "verdict") != NULL);
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(reply.header, "id")));
    kevo_frame_free(&reply);
  }
  return rc;
}

/* Lines of the fake workers' log naming op. */
static int logged(const char *log, const char *op) {
  FILE *f = fopen(log, "r");
  if (!f) return 0;
  char line[256];
  int n = 0;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, op, strlen(op)) && line[strlen(op)] == ' ') n++;
  fclose(f);
  return n;
}

static void test_url_and_frames(void) {
  rq_url u;
  kevo_error err;
  CHECK(rq_url_parse("redis://alice:pw@db.example:6380/3", NULL, &u, &err) == KEVO_OK);
  CHECK(!strcmp(u.host, "db.example") && u.port == 6380 && u.db == 3);
  CHECK(!strcmp(u.user, "alice") && !strcmp(u.password, "pw"));
  CHECK(!strstr(u.shown, "pw"));
  CHECK(rq_url_parse("redis://[::1]", NULL, &u, &err) == KEVO_OK && u.port == 6379 && !u.db);
  setenv("KEVO_TEST_PW", "from-env", 1);
  CHECK(rq_url_parse("redis://:x@h/0", "KEVO_TEST_PW", &u, &err) == KEVO_OK);
  CHECK(!strcmp(u.password, "from-env"));
  CHECK(rq_url_parse("redis://h", "KEVO_TEST_UNSET_PW", &u, &err) == KEVO_E_ARG);
  CHECK_STR_CONTAINS(err.msg, "KEVO_TEST_UNSET_PW is not set");
  CHECK(rq_url_parse("http://h", NULL, &u, &err) == KEVO_E_ARG);
  CHECK(rq_url_parse("redis://h:99999", NULL, &u, &err) == KEVO_E_ARG);
  CHECK(rq_url_parse("redis://h/x", NULL, &u, &err) == KEVO_E_ARG);
  char arch[16];
  CHECK(rq_arch_base("sm_90a", arch, sizeof arch, &err) == KEVO_OK && !strcmp(arch, "sm_90"));
  CHECK(rq_arch_base("sm_100f", arch, sizeof arch, &err) == KEVO_OK && !strcmp(arch, "sm_100"));
  CHECK(rq_arch_base("gfx90a", arch, sizeof arch, &err) == KEVO_E_ARG);

  cJSON *h = cJSON_CreateObject();
  cJSON_AddStringToObject(h, "op", "x");
  kevo_blob blobs[2] = {{"abc", 3}, {"", 0}};
  char *buf;
  size_t len;
  CHECK(rq_frame_encode(h, blobs, 2, &buf, &len, &err) == KEVO_OK);
  kevo_frame f;
  CHECK(rq_frame_decode(buf, len, &f, &err) == KEVO_OK);
  CHECK(f.nblobs == 2 && f.blobs[0].size == 3 && !memcmp(f.blobs[0].data, "abc", 3));
  kevo_frame_free(&f);
  CHECK(rq_frame_decode(buf, len - 1, &f, &err) == KEVO_E_PARSE);
  CHECK(rq_frame_decode(buf, 3, &f, &err) == KEVO_E_PARSE);
  free(buf);
  cJSON_Delete(h);
}

/* No worker, then one of another architecture, then one of ours; an oversized job. */
static void test_alive_arch_payload(void) {
  char url[512];
  url_for(url, sizeof url, &base, 1);
  flush_db(&base, 1);
  evalredis *r = driver(url, 64 << 10);
  kevo_error err = {0};
  CHECK(request(r, 10, NULL, 0, &err) == KEVO_E_WORKER);
  CHECK_STR_CONTAINS(err.msg, "no kevo worker for sm_90 is alive");
  const char *env80[] = {"KEVO_FAKE_CC=8,0", NULL};
  pid_t w80 = start_bridge(url, "ok", env80, NULL);
  const cJSON *dev;
  for (int i = 0; i < 150; i++) { /* until the sm_80 worker beats */
    CHECK(evalredis_device(r, &dev, &err) == KEVO_E_WORKER);
    if (strstr(err.msg, "sm_80: 1")) break;
    sleep_ms(100);
  }
  CHECK_STR_CONTAINS(err.msg, "workers alive: sm_80: 1");
  pid_t w90 = start_bridge(url, "ok", NULL, NULL);
  CHECK(wait_alive(r));
  CHECK(evalredis_device(r, &dev, &err) == KEVO_OK);
  CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(dev, "name")), "Fake GPU"));
  CHECK(cJSON_GetStringValue(cJSON_GetObjectItem(dev, "host")) != NULL);
  char by[256], trace[1100];
  snprintf(trace, sizeof trace, "%s/trace", tmp);
  setenv("KEVO_REDIS_TRACE", trace, 1);
  CHECK(request(r, 10, by, sizeof by, &err) == KEVO_OK);
  unsetenv("KEVO_REDIS_TRACE");
  CHECK(by[0] != '\0');
  FILE *tf = fopen(trace, "r");
  double round_trip = -1, worker_ms = -1;
  CHECK(tf && fscanf(tf, "%lf %lf", &round_trip, &worker_ms) == 2);
  CHECK(round_trip >= worker_ms && worker_ms >= 0);
  if (tf) fclose(tf);
  CHECK(evalredis_get_stats(r).requests == 1);

  /* a job over the payload limit is refused before it is sent */
  static char big[100 << 10];
  cJSON *req = cJSON_CreateObject();
  cJSON_AddStringToObject(req, "op", "evaluate");
  kevo_blob b = {big, sizeof big};
  kevo_frame reply;
  CHECK(evalredis_request(r, req, &b, 1, 10, &reply, &err) == KEVO_E_NOMEM);
  CHECK_STR_CONTAINS(err.msg, "over the limit");
  cJSON_Delete(req);
  stop_bridge(w80);
  stop_bridge(w90);
  evalredis_free(r);
}

typedef struct async_req {
  evalredis *r;
  double deadline_s;
  int rc;
  char by[256];
  kevo_error err;
} async_req;

static void *request_thread(void *arg) {
  async_req *a = arg;
  a->rc = request(a->r, a->deadline_s, a->by, sizeof a->by, &a->err);
  return NULL;
}

/* A slow worker (3 s per job, claim timeout 2 s) keeps its job while a second worker idles;
 * a deadline shorter than the job kills the evaluation: E_TIMEOUT. */
static void test_slow_worker(void) {
  char url[512], log[1024], logenv[1100];
  url_for(url, sizeof url, &base, 2);
  flush_db(&base, 2);
  snprintf(log, sizeof log, "%s/slow.log", tmp);
  snprintf(logenv, sizeof logenv, "KEVO_FAKE_LOG=%s", log);
  const char *env[] = {"KEVO_FAKE_EVAL_S=3", logenv, NULL};
  pid_t slow = start_bridge(url, "ok", env, NULL);
  evalredis *r = driver(url, 0);
  CHECK(wait_alive(r));
  async_req a = {r, 30, -1, "", {0}};
  pthread_t t;
  pthread_create(&t, NULL, request_thread, &a);
  for (int i = 0; i < 100 && logged(log, "evaluate") == 0; i++)
    sleep_ms(50);
  const char *env2[] = {logenv, NULL};
  pid_t idle = start_bridge(url, "ok", env2, NULL);
  pthread_join(t, NULL);
  CHECK(a.rc == KEVO_OK);
  CHECK(logged(log, "evaluate") == 1); /* the idle worker never took it */
  stop_bridge(idle);

  kevo_error err = {0};
  CHECK(request(r, 1, NULL, 0, &err) == KEVO_E_TIMEOUT);
  CHECK_STR_CONTAINS(err.msg, "no reply within 1 s");
  stop_bridge(slow);
  evalredis_free(r);
}

/* A worker killed mid-job: after the claim timeout another takes the job, which completes once.
 * Then a job whose worker is killed again goes to one allowing a single try: it fails, naming
 * the worker that took it. */
static void test_killed_worker(void) {
  char url[512], log[1024], logenv[1100];
  url_for(url, sizeof url, &base, 3);
  flush_db(&base, 3);
  snprintf(log, sizeof log, "%s/killed.log", tmp);
  snprintf(logenv, sizeof logenv, "KEVO_FAKE_LOG=%s", log);
  const char *env[] = {"KEVO_FAKE_EVAL_S=30", logenv, NULL};
  const char *env_ok[] = {logenv, NULL};
  evalredis *r = driver(url, 0);
  for (int round = 0; round < 2; round++) {
    pid_t doomed = start_bridge(url, "ok", env, NULL);
    CHECK(wait_alive(r));
    int before = logged(log, "evaluate");
    async_req a = {r, 60, -1, "", {0}};
    pthread_t t;
    pthread_create(&t, NULL, request_thread, &a);
    for (int i = 0; i < 200 && logged(log, "evaluate") == before; i++)
      sleep_ms(50);
    stop_bridge(doomed); /* SIGKILL mid-job: its fake worker dies with it */
    const char *one_try[] = {"--max-tries", "1", NULL};
    pid_t heir = start_bridge(url, "ok", env_ok, round ? one_try : NULL);
    pthread_join(t, NULL);
    if (round == 0) {
      CHECK(a.rc == KEVO_OK);
      CHECK(logged(log, "evaluate") == before + 2); /* the killed one's, and the heir's */
    } else {
      CHECK(a.rc == KEVO_E_WORKER);
      CHECK_STR_CONTAINS(a.err.msg, "taken 1 times by workers that stopped before answering");
      CHECK(logged(log, "evaluate") == before + 1);
    }
    stop_bridge(heir);
  }
  /* exactly once: no reply left behind, no job left in the stream */
  rq_url x = base;
  x.db = 3;
  rq_conn c;
  kevo_error err;
  CHECK(rq_connect(&c, &x, 2000, &err) == KEVO_OK);
  redisReply *rep;
  CHECK(rq_commandv(&c, rq_now_ms() + 2000, 0, &rep, &err, "KEYS", "kevo:reply:*", (char *)NULL) ==
        KEVO_OK);
  CHECK(rep->elements == 0);
  freeReplyObject(rep);
  CHECK(rq_commandv(&c, rq_now_ms() + 2000, 0, &rep, &err, "XLEN", "kevo:jobs:sm_90",
                    (char *)NULL) == KEVO_OK);
  CHECK(rep->integer == 0);
  freeReplyObject(rep);
  rq_close(&c);
  evalredis_free(r);
}

/* A pool sized by the live workers grows with them: a worker that joins adds a job in flight
 * from the next eval_pool_grow on (the evaluator's next batch); one alive gives one. */
static void test_pool_grows(void) {
  char url[512];
  url_for(url, sizeof url, &base, 5);
  flush_db(&base, 5);
  pid_t w1 = start_bridge(url, "ok", NULL, NULL);
  evalredis *probe = driver(url, 0);
  CHECK(wait_alive(probe));
  evalredis_opts o = {.url = url, .arch = "sm_90", .queue_s = 20};
  eval_pool *pool = NULL;
  kevo_error err = {0};
  CHECK(eval_pool_redis(&o, 0, &pool, &err) == KEVO_OK);
  CHECK(pool && eval_pool_size(pool) == 1);
  CHECK(eval_pool_grow(pool, &err) == KEVO_OK && eval_pool_size(pool) == 1);
  pid_t w2 = start_bridge(url, "ok", NULL, NULL);
  for (int i = 0; i < 150 && eval_pool_size(pool) < 2; i++) {
    CHECK(eval_pool_grow(pool, &err) == KEVO_OK);
    sleep_ms(100);
  }
  CHECK(eval_pool_size(pool) == 2);
  CHECK(!strcmp(eval_pool_at(pool, 1)->label, "redis sm_90 #2"));
  char by[256];
  CHECK(request(eval_pool_at(pool, 1)->self, 10, by, sizeof by, &err) == KEVO_OK);
  stop_bridge(w1); /* a worker that leaves takes no transport away */
  CHECK(eval_pool_grow(pool, &err) == KEVO_OK && eval_pool_size(pool) == 2);
  eval_pool_free(pool);
  stop_bridge(w2);
  evalredis_free(probe);
}

/* A job whose driver stopped waiting long ago (its entry id is ancient) is dropped unjudged. */
static void test_stale_job(void) {
  char url[512], log[1024], logenv[1100];
  url_for(url, sizeof url, &base, 4);
  flush_db(&base, 4);
  rq_url x = base;
  x.db = 4;
  rq_conn c;
  kevo_error err;
  CHECK(rq_connect(&c, &x, 2000, &err) == KEVO_OK);
  CHECK(rq_ensure_group(&c, "kevo:jobs:sm_90", rq_now_ms() + 2000, &err) == KEVO_OK);
  const char *job = "0123456789abcdef0123456789abcdef";
  redisReply *r;
  CHECK(rq_commandv(&c, rq_now_ms() + 2000, 0, &r, &err, "XADD", "kevo:jobs:sm_90", "1-1", "job",
                    job, "header", "{\"op\":\"evaluate\"}", "run_ms", "1000", "queue_ms", "1000",
                    "nblobs", "0", (char *)NULL) == KEVO_OK);
  freeReplyObject(r);
  snprintf(log, sizeof log, "%s/stale.log", tmp);
  snprintf(logenv, sizeof logenv, "KEVO_FAKE_LOG=%s", log);
  const char *env[] = {logenv, NULL};
  pid_t w = start_bridge(url, "ok", env, NULL);
  int got = 0;
  for (int i = 0; i < 150 && !got; i++) {
    CHECK(rq_commandv(&c, rq_now_ms() + 2000, 0, &r, &err, "LPOP",
                      "kevo:reply:0123456789abcdef0123456789abcdef", (char *)NULL) == KEVO_OK);
    if (r->type == REDIS_REPLY_STRING) {
      kevo_frame f;
      CHECK(rq_frame_decode(r->str, r->len, &f, &err) == KEVO_OK);
      CHECK_STR_CONTAINS(cJSON_GetStringValue(cJSON_GetObjectItem(f.header, "kevo_error")),
                         "E_TIMEOUT");
      CHECK_STR_CONTAINS(cJSON_GetStringValue(cJSON_GetObjectItem(f.header, "message")),
                         "past its driver's deadline");
      kevo_frame_free(&f);
      got = 1;
    }
    freeReplyObject(r);
    if (!got) sleep_ms(100);
  }
  CHECK(got);
  CHECK(logged(log, "evaluate") == 0);
  stop_bridge(w);
  rq_close(&c);
}

/* ---- private servers ---- */

static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  int port = 0;
  if (!bind(s, (struct sockaddr *)&a, sizeof a) && !getsockname(s, (struct sockaddr *)&a, &len))
    port = ntohs(a.sin_port);
  close(s);
  return port;
}

static const char *redis_server(void) {
  const char *s = getenv("KEVO_REDIS_SERVER");
  if (s && *s) return s;
  return access("/usr/bin/redis-server", X_OK) == 0 ? "/usr/bin/redis-server" : NULL;
}

/* Starts a redis-server on loopback port with AOF in tmp; waits until it answers PING. */
static pid_t start_server(int port, const char *password) {
  char p[16], dir[1100];
  snprintf(p, sizeof p, "%d", port);
  snprintf(dir, sizeof dir, "%s/server-%d", tmp, port); /* its own AOF */
  mkdir(dir, 0700);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) dup2(fd, 1);
    const char *argv[20] = {"redis-server",
                            "--port",
                            p,
                            "--bind",
                            "127.0.0.1",
                            "--dir",
                            dir,
                            "--appendonly",
                            "yes",
                            "--appendfilename",
                            "kevo-test.aof",
                            "--save",
                            "",
                            "--dbfilename",
                            "kevo-test.rdb"};
    int a = 15;
    if (password) argv[a++] = "--requirepass", argv[a++] = password;
    argv[a] = NULL;
    execv(redis_server(), (char **)argv);
    _exit(127);
  }
  for (int i = 0; i < 100; i++) {
    redisContext *c = redisConnect("127.0.0.1", port);
    int up = c && !c->err;
    if (c) redisFree(c);
    if (up) return pid;
    sleep_ms(50);
  }
  return pid;
}

static void stop_server(pid_t pid) {
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
}

static void test_password(void) {
  int port = free_port();
  pid_t srv = start_server(port, "s3cret");
  char url[256];
  snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", port);
  evalredis *r = NULL;
  kevo_error err = {0};
  evalredis_opts o = {.url = url, .arch = "sm_90"};
  CHECK(evalredis_new(&o, &r, &err) == KEVO_E_ARG);
  CHECK_STR_CONTAINS(err.msg, "wants a password");
  setenv("KEVO_TEST_REDIS_PW", "wrong", 1);
  o.password_env = "KEVO_TEST_REDIS_PW";
  CHECK(evalredis_new(&o, &r, &err) == KEVO_E_ARG);
  CHECK_STR_CONTAINS(err.msg, "refused the password");
  CHECK(!strstr(err.msg, "wrong"));
  /* a worker with the wrong password says so and exits 1 */
  const char *pw_env[] = {"--password-env", "KEVO_TEST_REDIS_PW", NULL};
  pid_t w = start_bridge(url, "ok", NULL, pw_env);
  int status = 0;
  waitpid(w, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
  setenv("KEVO_TEST_REDIS_PW", "s3cret", 1);
  CHECK(evalredis_new(&o, &r, &err) == KEVO_OK);
  w = start_bridge(url, "ok", NULL, pw_env);
  CHECK(wait_alive(r));
  CHECK(request(r, 10, NULL, 0, &err) == KEVO_OK);
  stop_bridge(w);
  evalredis_free(r);
  stop_server(srv);
}

/* Redis restarts while a job is being evaluated: the worker's outcome and the driver's wait
 * survive it (AOF), both reconnect. */
static void test_restart(void) {
  int port = free_port();
  pid_t srv = start_server(port, NULL);
  char url[256], log[1024], logenv[1100];
  snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", port);
  snprintf(log, sizeof log, "%s/restart.log", tmp);
  snprintf(logenv, sizeof logenv, "KEVO_FAKE_LOG=%s", log);
  const char *env[] = {"KEVO_FAKE_EVAL_S=2", logenv, NULL};
  pid_t w = start_bridge(url, "ok", env, NULL);
  evalredis *r = driver(url, 0);
  CHECK(wait_alive(r));
  async_req a = {r, 30, -1, "", {0}};
  pthread_t t;
  pthread_create(&t, NULL, request_thread, &a);
  for (int i = 0; i < 100 && logged(log, "evaluate") == 0; i++)
    sleep_ms(50);
  stop_server(srv); /* SIGTERM: the server writes its AOF and exits, mid-job */
  sleep_ms(3000);   /* the job ends while Redis is away: the worker holds its outcome */
  srv = start_server(port, NULL);
  pthread_join(t, NULL);
  if (a.rc) fprintf(stderr, "after the restart: %s\n", a.err.msg);
  CHECK(a.rc == KEVO_OK);
  CHECK(evalredis_reconnects(r) >= 1);
  CHECK(logged(log, "evaluate") == 1);
  kevo_error err = {0};
  CHECK(request(r, 10, NULL, 0, &err) == KEVO_OK); /* and the next one goes as usual */
  /* with Redis away and no job in hand, SIGTERM stops the worker at once (it waited a minute) */
  stop_server(srv);
  sleep_ms(500);
  long long t0 = rq_now_ms();
  kill(w, SIGTERM);
  int status = 0;
  CHECK(waitpid(w, &status, 0) == w && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK(rq_now_ms() - t0 < 10000);
  evalredis_free(r);
}

int main(void) {
  src_root = getenv("KEVO_SRC");
  kevo_bin = getenv("KEVO");
  test_url_and_frames();
  const char *shared = getenv("KEVO_TEST_REDIS");
  if (!shared || !*shared || !src_root || !kevo_bin) {
    fprintf(stderr, "SKIP: KEVO_TEST_REDIS is not set (redis://127.0.0.1:PORT of a redis-server "
                    "for tests; .ci/run starts one): the Redis fault tests did not run\n");
    return 77;
  }
  kevo_error err;
  if (rq_url_parse(shared, NULL, &base, &err)) {
    fprintf(stderr, "KEVO_TEST_REDIS: %s\n", err.msg);
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  if (!mkdtemp(tmp)) return 1;
  test_alive_arch_payload();
  test_slow_worker();
  test_killed_worker();
  test_stale_job();
  test_pool_grows();
  if (redis_server()) {
    test_password();
    test_restart();
  } else {
    fprintf(stderr, "SKIP (part): no redis-server ($KEVO_REDIS_SERVER): the password and restart "
                    "cases did not run\n");
  }
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  if (!check_failures && system(cmd)) {
  }
  CHECK_DONE();
}
