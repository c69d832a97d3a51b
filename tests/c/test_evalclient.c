/* The evaluator client against a real subprocess (tests/integration/fake_worker.py speaking the
 * real frame protocol): deadlines kill and respawn, a dead or crashed worker is replaced and the
 * next request works, garbage is E_WORKER, the environment is scrubbed. */
#include "check.h"
#include "eval_client.h"

#include <cjson/cJSON.h>

#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char state_dir[] = "/tmp/kevo-evalclient-XXXXXX";
static const char *src_root;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static evalclient *client(const char *mode) {
  char cmd[2048];
  static int n;
  snprintf(cmd, sizeof cmd, "python3 %s/tests/integration/fake_worker.py %s %s/state%d", src_root,
           mode, state_dir, n++);
  evalclient_opts o = {.worker_cmd = cmd, .hello_timeout_s = 30};
  evalclient *c = NULL;
  kevo_error err = {0};
  CHECK(evalclient_new(&o, &c, &err) == KEVO_OK);
  return c;
}

/* One "ping" request (the fake worker answers unknown ops); returns the status. */
static int ping(evalclient *c, double deadline_s, kevo_error *err) {
  cJSON *req = cJSON_CreateObject();
  cJSON_AddStringToObject(req, "op", "ping");
  kevo_frame reply;
  int rc = evalclient_request(c, req, NULL, 0, deadline_s, &reply, err);
  cJSON_Delete(req);
  if (rc == KEVO_OK) {
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(reply.header, "id")));
    kevo_frame_free(&reply);
  }
  return rc;
}

static int env_has(const cJSON *device, const char *name) {
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(device, "env")) {
    if (cJSON_IsString(e) && !strcmp(e->valuestring, name)) return 1;
  }
  return 0;
}

static void test_ok_and_scrubbed_env(void) {
  setenv("OPENAI_API_KEY", "sk-secret", 1);
  setenv("KEVO_API_TOKEN", "secret", 1);
  setenv("KEVO_FAKE_FLAG", "1", 1);
  setenv("SOME_OTHER_THING", "1", 1);
  evalclient *c = client("ok");
  kevo_error err = {0};
  const cJSON *dev = NULL;
  CHECK(evalclient_device(c, &dev, &err) == KEVO_OK);
  CHECK(dev && !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(dev, "name")), "Fake GPU"));
  CHECK(!env_has(dev, "OPENAI_API_KEY"));
  CHECK(!env_has(dev, "KEVO_API_TOKEN"));
  CHECK(!env_has(dev, "SOME_OTHER_THING"));
  CHECK(env_has(dev, "KEVO_FAKE_FLAG"));
  CHECK(env_has(dev, "PATH"));
  int pid = evalclient_pid(c);
  CHECK(pid > 0);
  CHECK(ping(c, 10, &err) == KEVO_OK);
  CHECK(ping(c, 10, &err) == KEVO_OK);
  CHECK(evalclient_pid(c) == pid); /* one worker serves many requests */
  evalclient_stats s = evalclient_get_stats(c);
  CHECK(s.spawns == 1 && s.requests == 2 && s.kills == 0);
  evalclient_free(c);
  CHECK(kill(pid, 0) != 0); /* reaped: gone */

  CHECK(evalclient_env_allowed("PATH=/bin"));
  CHECK(evalclient_env_allowed("KEVO_DB=x"));
  CHECK(!evalclient_env_allowed("KEVO_OPENAI_KEY=x"));
  CHECK(!evalclient_env_allowed("KEVO_secret=x"));
  CHECK(!evalclient_env_allowed("ANTHROPIC_API_KEY=x"));
  CHECK(!evalclient_env_allowed("LD_PRELOAD=x"));
  CHECK(!evalclient_env_allowed("PATHX=x"));
}

static void test_deadline_kills_and_respawns(void) {
  evalclient *c = client("hang-once");
  kevo_error err = {0};
  const cJSON *dev;
  CHECK(evalclient_device(c, &dev, &err) == KEVO_OK);
  int pid = evalclient_pid(c);
  double t0 = now_s();
  cJSON *req = cJSON_CreateObject();
  cJSON_AddStringToObject(req, "op", "evaluate");
  kevo_frame reply;
  CHECK(evalclient_request(c, req, NULL, 0, 0.5, &reply, &err) == KEVO_E_TIMEOUT);
  cJSON_Delete(req);
  double took = now_s() - t0;
  CHECK(took >= 0.45 && took < 5);
  CHECK_STR_CONTAINS(err.msg, "no reply within 0.5 s: the worker was killed");
  CHECK(evalclient_pid(c) == 0);
  CHECK(kill(pid, 0) != 0);
  CHECK(ping(c, 10, &err) == KEVO_OK); /* a fresh worker */
  CHECK(evalclient_pid(c) != pid && evalclient_pid(c) > 0);
  evalclient_stats s = evalclient_get_stats(c);
  CHECK(s.spawns == 2 && s.kills == 1);
  evalclient_free(c);
}

static void test_death_and_garbage(void) {
  kevo_error err = {0};
  evalclient *c = client("die-once");
  cJSON *req = cJSON_CreateObject();
  cJSON_AddStringToObject(req, "op", "evaluate");
  kevo_frame reply;
  CHECK(evalclient_request(c, req, NULL, 0, 10, &reply, &err) == KEVO_E_WORKER);
  CHECK_STR_CONTAINS(err.msg, "the worker died before replying (exited with status 3)");
  CHECK(evalclient_pid(c) == 0);
  CHECK(ping(c, 10, &err) == KEVO_OK);
  CHECK(evalclient_get_stats(c).spawns == 2);
  evalclient_free(c);

  c = client("garbage-once");
  double t0 = now_s();
  CHECK(evalclient_request(c, req, NULL, 0, 10, &reply, &err) == KEVO_E_WORKER);
  CHECK(now_s() - t0 < 5); /* found out at once, not at the deadline */
  CHECK_STR_CONTAINS(err.msg, "the worker sent garbage");
  CHECK(ping(c, 10, &err) == KEVO_OK);
  evalclient_free(c);

  c = client("crash-once");
  CHECK(evalclient_request(c, req, NULL, 0, 10, &reply, &err) == KEVO_OK);
  CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(reply.header, "verdict")), "crash"));
  kevo_frame_free(&reply);
  CHECK(evalclient_pid(c) == 0); /* retired */
  CHECK(ping(c, 10, &err) == KEVO_OK);
  evalclient_stats s = evalclient_get_stats(c);
  CHECK(s.spawns == 2 && s.deaths == 1 && s.kills == 0);
  evalclient_free(c);
  cJSON_Delete(req);
}

static void test_nogpu_and_bad_command(void) {
  kevo_error err = {0};
  evalclient *c = client("nogpu");
  const cJSON *dev;
  CHECK(evalclient_device(c, &dev, &err) == KEVO_E_NOGPU);
  CHECK_STR_CONTAINS(err.msg, "no CUDA driver (fake)");
  CHECK(ping(c, 10, &err) == KEVO_E_NOGPU);
  CHECK(evalclient_get_stats(c).spawns == 1); /* cached, not retried per request */
  evalclient_free(c);

  evalclient_opts o = {.worker_cmd = "/nonexistent/kevo-worker"};
  CHECK(evalclient_new(&o, &c, &err) == KEVO_OK);
  CHECK(ping(c, 10, &err) == KEVO_E_WORKER);
  CHECK_STR_CONTAINS(err.msg, "did not answer hello");
  CHECK_STR_CONTAINS(err.msg, "exited with status 127");
  evalclient_free(c);

  /* freeing a client says bye and reaps the worker promptly */
  c = client("hang");
  CHECK(evalclient_device(c, &dev, &err) == KEVO_OK);
  int pid = evalclient_pid(c);
  double t0 = now_s();
  evalclient_free(c);
  CHECK(now_s() - t0 < 3 && kill(pid, 0) != 0);
}

int main(void) {
  src_root = getenv("KEVO_SRC");
  if (!src_root) {
    fprintf(stderr, "test_evalclient: KEVO_SRC is not set (run under ctest)\n");
    return 1;
  }
  if (!mkdtemp(state_dir)) return 1;
  test_ok_and_scrubbed_env();
  test_deadline_kills_and_respawns();
  test_death_and_garbage();
  test_nogpu_and_bad_command();
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", state_dir);
  CHECK(system(cmd) == 0);
  CHECK_DONE();
}
