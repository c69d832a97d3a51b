/* The worker's deadline from the problem (eval_deadline.c): a small problem gets the floor, an
 * 8 GiB one more, a measured slow reference more still, never past the ceiling; the reason
 * names where the time per run came from. */
#include "check.h"
#include "eval_deadline.h"

#include <cjson/cJSON.h>

static cJSON *request(double bytes, int nshapes, int trials, int bench) {
  cJSON *r = cJSON_CreateObject();
  cJSON *sh = cJSON_AddArrayToObject(r, "shapes");
  for (int i = 0; i < nshapes; i++)
    cJSON_AddItemToArray(sh, cJSON_CreateObject());
  cJSON_AddNumberToObject(cJSON_AddObjectToObject(r, "verify"), "trials", trials);
  cJSON_AddNumberToObject(cJSON_AddObjectToObject(r, "cost"), "bytes", bytes);
  cJSON *b = cJSON_AddObjectToObject(r, "bench");
  cJSON_AddBoolToObject(b, "enabled", bench);
  cJSON_AddNumberToObject(b, "max_ms", 1500);
  cJSON_AddNumberToObject(b, "warmup_ms", 25);
  cJSON_AddNumberToObject(b, "min_reps", 10);
  return r;
}

int main(void) {
  eval_deadline d;
  cJSON *small = request(4096, 4, 5, 1);
  eval_deadline_of(small, 1, 4200, 0, &d);
  CHECK(d.s == EVAL_DEADLINE_FLOOR_S);
  CHECK_STR_CONTAINS(d.why, "its bytes at the copy bandwidth");

  /* 8 GiB moved, 1 shape, 5 trials: 2 ms a run at 4.2 TB/s */
  cJSON *big = request(8.0 * (1 << 30), 1, 5, 1);
  eval_deadline_of(big, 1, 4200, 0, &d);
  CHECK(d.run_ms > 2.0 && d.run_ms < 2.1);
  CHECK(d.s >= EVAL_DEADLINE_FLOOR_S && d.s < 60);
  /* its reference measured at 300 ms a run: 15 runs at 100x, far more */
  eval_deadline_of(big, 1, 4200, 300, &d);
  CHECK(d.run_ms == 300);
  CHECK(d.s == EVAL_DEADLINE_CEILING_S);
  CHECK_STR_CONTAINS(d.why, "the reference's measured time");
  CHECK_STR_CONTAINS(d.why, "within [20, 600] s");
  /* a measured reference time below the bytes' own is not believed */
  eval_deadline_of(big, 1, 4200, 0.5, &d);
  CHECK(d.run_ms > 2.0);
  /* several candidates in one request: each one's runs */
  double one;
  cJSON *mid = request(512.0 * (1 << 20), 2, 5, 0);
  eval_deadline_of(mid, 1, 4200, 5, &d);
  one = d.s;
  eval_deadline_of(mid, 4, 4200, 5, &d);
  CHECK(d.s > one);
  cJSON_Delete(small);
  cJSON_Delete(big);
  cJSON_Delete(mid);
  CHECK_DONE();
}
