/* The evaluator's feedback to the model (eval_feedback.c) on timing results: a memory-bound
 * kernel is told its share of the copy bandwidth, a compute-bound one its share of the compute
 * peak, and each gets the advice for its own bound only. */
#include "check.h"
#include "evaluate.h"

#include <cjson/cJSON.h>

static char *feedback_for(const char *json) {
  cJSON *res = cJSON_Parse(json);
  CHECK(res != NULL);
  char *fb = eval_feedback(res, "", 0);
  cJSON_Delete(res);
  return fb;
}

int main(void) {
  /* memory-bound, slow: the memory advice */
  char *fb = feedback_for("{\"verdict\": \"ok\", \"bench\": {\"median_ms\": 1, \"gbps\": 1500, "
                          "\"tflops\": 0.2, \"roofline_pct\": 36, \"bound\": \"memory\"}}");
  CHECK_STR_CONTAINS(fb, "Memory throughput 1500 GB/s = 36% of the device's copy bandwidth.");
  CHECK_STR_CONTAINS(fb, "well below the memory roofline");
  CHECK(!strstr(fb, "compute-bound"));
  free(fb);

  /* a result that does not say its bound (an older worker) reads as memory-bound */
  fb = feedback_for("{\"verdict\": \"ok\", \"bench\": {\"median_ms\": 1, \"gbps\": 1500, "
                    "\"roofline_pct\": 36}}");
  CHECK_STR_CONTAINS(fb, "= 36% of the device's copy bandwidth");
  free(fb);

  /* compute-bound, slow: no memory advice (its bytes are not the limit), the compute one */
  fb = feedback_for("{\"verdict\": \"ok\", \"bench\": {\"median_ms\": 0.6, \"gbps\": 170, "
                    "\"tflops\": 229, \"roofline_pct\": 21.4, \"bound\": \"compute\", "
                    "\"peak_tflops\": 1070.5, \"peak_of\": \"tensor-core\"}}");
  CHECK_STR_CONTAINS(fb, "Memory throughput 170 GB/s.");
  CHECK(!strstr(fb, "copy bandwidth") && !strstr(fb, "memory roofline"));
  CHECK_STR_CONTAINS(fb, "Compute: 229 TFLOP/s = 21% of the GPU's tensor-core peak (1070 TFLOP/s");
  CHECK_STR_CONTAINS(fb, "compute-bound and well below the compute roofline");
  free(fb);

  /* compute-bound and near the peak: no advice */
  fb = feedback_for("{\"verdict\": \"ok\", \"bench\": {\"median_ms\": 0.19, \"gbps\": 540, "
                    "\"tflops\": 743, \"roofline_pct\": 69.4, \"bound\": \"compute\", "
                    "\"peak_tflops\": 1070.5, \"peak_of\": \"tensor-core\"}}");
  CHECK_STR_CONTAINS(fb, "= 69% of the GPU's tensor-core peak");
  CHECK(!strstr(fb, "well below"));
  free(fb);
  CHECK_DONE();
}
