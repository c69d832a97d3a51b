/* The worker's GPU-free parts: its device kernels compile with NVRTC for sm_90 (and a second
 * arch), the reference cache keeps within its byte cap in LRU order, and loading the CUDA
 * driver where there is none says E_NOGPU. */
#include "check.h"
#include "cudrv.h"
#include "devkernels.h"
#include "gpueval_int.h"

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
