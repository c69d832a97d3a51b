/* The worker pool's parts that need no worker (runtime/eval_pool.h): how `--gpus` is read, and
 * how a list maps onto the GPUs the driver sees (CUDA_VISIBLE_DEVICES); and eval_pool_each
 * running work on every transport's own thread at once. */
#include "check.h"
#include "eval_pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static void test_gpu_lists(void) {
  kevo_error err = {0};
  eval_pool *p = NULL;
  unsetenv("CUDA_VISIBLE_DEVICES");
  CHECK(eval_pool_local("0,2,3", NULL, &p, &err) == KEVO_OK);
  CHECK(p && eval_pool_size(p) == 3);
  CHECK(p && !strcmp(eval_pool_at(p, 1)->gpu, "2") && !strcmp(eval_pool_at(p, 1)->label, "gpu 2"));
  CHECK(p && !strcmp(eval_pool_at(p, 0)->ops->kind, "local"));
  eval_pool_free(p);

  CHECK(eval_pool_local(NULL, NULL, &p, &err) == KEVO_OK); /* the default: one, no GPU named */
  CHECK(p && eval_pool_size(p) == 1 && eval_pool_at(p, 0)->gpu[0] == '\0');
  eval_pool_free(p);

  const char *bad[] = {"0,,1", "0,0", "x", "1,", "-1", "0 1", NULL};
  for (int i = 0; bad[i]; i++) {
    p = NULL;
    CHECK(eval_pool_local(bad[i], NULL, &p, &err) == KEVO_E_ARG && p == NULL);
    CHECK_STR_CONTAINS(err.msg, "--gpus");
  }

  /* the driver sees GPUs 4 and 5 only: ordinals count those */
  setenv("CUDA_VISIBLE_DEVICES", "4,5", 1);
  CHECK(eval_pool_local("1,0", NULL, &p, &err) == KEVO_OK);
  CHECK(p && !strcmp(eval_pool_at(p, 0)->gpu, "5") && !strcmp(eval_pool_at(p, 1)->gpu, "4"));
  eval_pool_free(p);
  CHECK(eval_pool_local("2", NULL, &p, &err) == KEVO_E_ARG);
  CHECK_STR_CONTAINS(err.msg, "GPU 2 is not among the 2 this kevo sees");
  unsetenv("CUDA_VISIBLE_DEVICES");
}

typedef struct each_state {
  pthread_t who[4];
  int hits[4];
} each_state;

static void each_fn(void *arg, size_t i) {
  each_state *s = arg;
  s->who[i] = pthread_self();
  s->hits[i]++;
  usleep(200000);
}

static void test_each_threads(void) {
  kevo_error err = {0};
  eval_pool *p = NULL;
  CHECK(eval_pool_local("0,1,2,3", NULL, &p, &err) == KEVO_OK);
  each_state s = {0}, again = {0};
  eval_pool_each(p, 4, each_fn, &s);
  eval_pool_each(p, 3, each_fn, &again);
  for (int i = 0; i < 4; i++) {
    CHECK(s.hits[i] == 1 && !pthread_equal(s.who[i], pthread_self()));
    for (int j = 0; j < i; j++)
      CHECK(!pthread_equal(s.who[i], s.who[j])); /* one thread per transport */
  }
  for (int i = 0; i < 3; i++) /* ... and the same thread every time */
    CHECK(again.hits[i] == 1 && pthread_equal(again.who[i], s.who[i]));
  CHECK(again.hits[3] == 0);
  eval_pool_free(p);
}

int main(void) {
  test_gpu_lists();
  test_each_threads();
  CHECK_DONE();
}
