/* The HTTP core without a server: argument checks, refused connections recorded per request,
 * start delays honoured, responses handed over as each ends, and kevo.llm usable (and safe)
 * inside a strategy sandbox. */
#include "check.h"
#include "http.h"
#include "luastate.h"

#include <lauxlib.h>
#include <lua.h>

#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_core(void) {
  kevo_error err = {0};
  kevo_http_client *c = NULL;
  CHECK(kevo_http_client_new(&c, 0, &err) == KEVO_E_ARG && c == NULL);
  CHECK(kevo_http_client_new(&c, 4, &err) == KEVO_OK && c != NULL);
  CHECK(kevo_http_run(c, NULL, NULL, 0, &err) == KEVO_OK);

  /* Port 1 on loopback refuses: each response says so; the batch itself succeeds. The second
   * request starts 200 ms late. */
  kevo_http_request rq[2] = {
      {.method = "GET", .url = "http://127.0.0.1:1/", .connect_timeout_ms = 2000},
      {.method = "POST",
       .url = "http://127.0.0.1:1/",
       .body = "{}",
       .body_len = 2,
       .delay_ms = 200,
       .auth_env = "KEVO_NO_SUCH_VARIABLE",
       .auth_header = "x-api-key"}};
  kevo_http_response rs[2];
  kevo_http_response_init(&rs[0]);
  kevo_http_response_init(&rs[1]);
  double t0 = now_s();
  CHECK(kevo_http_run(c, rq, rs, 2, &err) == KEVO_OK);
  double t = now_s() - t0;
  CHECK(t >= 0.19 && t < 5);
  for (int i = 0; i < 2; i++) {
    CHECK(rs[i].error == KEVO_E_HTTP);
    CHECK(rs[i].status == 0);
    CHECK(rs[i].errmsg[0] != 0);
    kevo_http_response_free(&rs[i]);
  }
  kevo_http_client_free(c);
  kevo_http_client_free(NULL);
}

typedef struct seen {
  size_t order[4];
  int errors[4];
  double at[4];
  size_t n;
  int stop_after; /* return nonzero once this many have ended; 0: never */
} seen;

static int on_done(void *ud, size_t index, kevo_http_response *resp) {
  seen *s = ud;
  if (s->n < 4) {
    s->order[s->n] = index;
    s->errors[s->n] = resp->error;
    s->at[s->n] = now_s();
  }
  s->n++;
  return s->stop_after && (int)s->n >= s->stop_after ? KEVO_E_INTERNAL : KEVO_OK;
}

/* kevo_http_run_each hands each response over the moment it ends, in the order they end (the
 * start delays order them here), and a nonzero return abandons the rest of the batch at once. */
static void test_each(void) {
  kevo_error err = {0};
  kevo_http_client *c = NULL;
  CHECK(kevo_http_client_new(&c, 4, &err) == KEVO_OK);
  kevo_http_request rq[3] = {{.method = "GET", .url = "http://127.0.0.1:1/", .delay_ms = 300},
                             {.method = "GET", .url = "http://127.0.0.1:1/"},
                             {.method = "GET", .url = "http://127.0.0.1:1/", .delay_ms = 150}};
  kevo_http_response rs[3];
  for (int i = 0; i < 3; i++)
    kevo_http_response_init(&rs[i]);
  seen s = {0};
  double t0 = now_s();
  CHECK(kevo_http_run_each(c, rq, rs, 3, on_done, &s, &err) == KEVO_OK);
  CHECK(s.n == 3 && s.order[0] == 1 && s.order[1] == 2 && s.order[2] == 0);
  CHECK(s.errors[0] == KEVO_E_HTTP && s.errors[2] == KEVO_E_HTTP); /* final when handed over */
  CHECK(s.at[1] - t0 >= 0.14 && s.at[2] - t0 >= 0.29);
  for (int i = 0; i < 3; i++) {
    kevo_http_response_free(&rs[i]);
    kevo_http_response_init(&rs[i]);
  }

  /* the caller stops the batch after the first response: the others are abandoned, not run */
  seen s2 = {.stop_after = 1};
  t0 = now_s();
  CHECK(kevo_http_run_each(c, rq, rs, 3, on_done, &s2, &err) == KEVO_E_INTERNAL);
  CHECK(now_s() - t0 < 0.29); /* the request delayed by 300 ms never started */
  CHECK(s2.n == 1 && s2.order[0] == 1);
  CHECK(rs[0].error == KEVO_E_HTTP && strstr(rs[0].errmsg, "abandoned"));
  CHECK(rs[2].error == KEVO_E_HTTP && strstr(rs[2].errmsg, "abandoned"));
  for (int i = 0; i < 3; i++)
    kevo_http_response_free(&rs[i]);
  kevo_http_client_free(c);
}

/* kevo.llm inside a sandbox: it loads without io/os, reads no environment, and a generate
 * without a configured model raises (misuse) instead of reaching the network. */
static void test_sandbox(void) {
  kevo_lua_opts o = {.sandbox = 1,
                     .mem_limit = 64u << 20,
                     .instr_limit = 50u * 1000 * 1000,
                     .time_limit_s = 10,
                     .seed = 1};
  kevo_error err = {0};
  lua_State *L = kevo_lua_new(&o, &err);
  CHECK(L != NULL);
  if (!L) return;
  /* A strategy may not reach the network or the API key itself: kevo.llm and kevo.http are
   * privileged in a sandbox; the pure helpers are not. */
  const char *code =
      "local ok, msg = pcall(require, 'kevo.llm')\n"
      "assert(not ok and msg:find('not allowed in a sandbox'), msg)\n"
      "ok, msg = pcall(require, 'kevo.http')\n"
      "assert(not ok and msg:find('not allowed in a sandbox'), msg)\n"
      "assert(require('kevo.extract').candidates('```cuda\\n__global__ void k(){}\\n```'))\n"
      "return 'sandbox ok'\n";
  int st = kevo_lua_load(L, code, strlen(code), "=sandbox");
  if (st == LUA_OK) st = kevo_lua_pcall(L, 0, 1);
  if (st != LUA_OK) fprintf(stderr, "%s\n", lua_tostring(L, -1));
  CHECK(st == LUA_OK);
  kevo_lua_close(L);
}

int main(void) {
  test_core();
  test_each();
  test_sandbox();
  CHECK_DONE();
}
