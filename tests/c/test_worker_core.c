/* The worker's GPU-free parts: its device kernels compile with NVRTC for sm_90 (and a second
 * arch), the reference cache keeps within its byte cap in LRU order, loading the CUDA driver
 * where there is none says E_NOGPU, and the bench's drift rule (class 9) on synthetic timings. */
#include "check.h"
#include "cudrv.h"
#include "devkernels.h"
#include "gpueval_int.h"

#include <math.h>
#include <stdlib.h>

static void **bufs(size_t n) {
  void **b = calloc(n, sizeof *b);
  for (size_t i = 0; i < n; i++)
    b[i] = malloc(16);
  return b;
}

int main(void) {
  kevo_error err = {0};
  void *cubin = NULL;
  size_t size = 0;
  CHECK(devk_compile(9, 0, &cubin, &size, &err) == KEVO_OK);
  if (err.status) fprintf(stderr, "%s\n", err.msg);
  CHECK(cubin && size > 1000);
  free(cubin);
  CHECK(devk_compile(8, 0, &cubin, &size, &err) == KEVO_OK);
  free(cubin);

  wk_refcache *c = wk_refcache_new(300);
  const char k1[KEVO_HASH_HEX] = "a", k2[KEVO_HASH_HEX] = "b", k3[KEVO_HASH_HEX] = "c";
  wk_refcache_put(c, k1, bufs(1), 1, 100, 0);
  wk_refcache_put(c, k2, bufs(2), 2, 100, 0);
  CHECK(wk_refcache_get(c, k1, NULL) != NULL); /* k1 now more recent than k2 */
  wk_refcache_put(c, k3, bufs(1), 1, 150, 0);
  CHECK(wk_refcache_get(c, k2, NULL) == NULL); /* least recently used went first */
  CHECK(wk_refcache_get(c, k1, NULL) != NULL);
  CHECK(wk_refcache_get(c, k3, NULL) != NULL);
  wk_refcache_put(c, k2, bufs(1), 1, 1000, 0); /* bigger than the cap: kept alone */
  CHECK(wk_refcache_get(c, k2, NULL) != NULL);
  CHECK(wk_refcache_get(c, k1, NULL) == NULL && wk_refcache_get(c, k3, NULL) == NULL);
  wk_refcache_put(c, k2, bufs(1), 1, 10, 0); /* replacing a key */
  CHECK(wk_refcache_get(c, k2, NULL) != NULL);
  int ipc = -1;
  wk_refcache_put(c, k1, bufs(1), 1, 0, 1); /* device references: records, freed plainly */
  CHECK(wk_refcache_get(c, k1, &ipc) != NULL && ipc == 1);
  CHECK(wk_refcache_get(c, k2, &ipc) != NULL && ipc == 0);
  wk_refcache_free(c);

  /* class 9's drift rule on synthetic timings (ms): the reference alone at 1.00 (5 reps), then
   * interleaved with the candidate's reps */
  double alone[5] = {1.000, 1.001, 0.999, 1.000, 1.002}, inter[50], drift = 0, ref_ms = 0;
  for (int i = 0; i < 50; i++)
    inter[i] = 1.0 + 0.001 * (i % 3);
  CHECK(wk_ref_drift(inter, 50, alone, 5, &drift, &ref_ms) == 0);
  CHECK(fabs(drift) < 0.01 && fabs(ref_ms - 1.001) < 1e-9); /* its interleaved median */
  for (int i = 0; i < 50; i++)
    inter[i] = 1.04 + 0.001 * (i % 3); /* 4% slower: within the 5% noise floor */
  CHECK(wk_ref_drift(inter, 50, alone, 5, &drift, &ref_ms) == 0 && ref_ms > 1.04);
  for (int i = 0; i < 50; i++)
    inter[i] = 1.20 + 0.001 * (i % 3); /* 20% slower: fires, the speed-up against alone */
  CHECK(wk_ref_drift(inter, 50, alone, 5, &drift, &ref_ms) == 1);
  CHECK(fabs(drift - 0.201) < 0.002 && fabs(ref_ms - 1.0) < 1e-9);
  double noisy[5] = {0.6, 1.4, 0.7, 1.3, 1.0}; /* alone too noisy to tell a 20% drift */
  CHECK(wk_ref_drift(inter, 50, noisy, 5, &drift, &ref_ms) == 0 && ref_ms > 1.2);
  CHECK(wk_ref_drift(inter, 50, alone, 0, &drift, &ref_ms) == 0); /* nothing alone: no rule */

  cudrv d;
  int rc = cudrv_load(&d, &err);
  if (rc == KEVO_OK) {
    printf("note: a CUDA driver is present here\n");
    cudrv_unload(&d);
  } else {
    CHECK(rc == KEVO_E_NOGPU);
    CHECK_STR_CONTAINS(err.msg, "libcuda.so.1");
  }
  CHECK(cudrv_is_sticky(CUDA_ERROR_ILLEGAL_ADDRESS) && !cudrv_is_sticky(CUDA_ERROR_INVALID_VALUE));
  CHECK_DONE();
}
