/* The Triton side of launch plans: the signature derived from a resolved launch, and the
 * launch finished for a compiled module (block from num_warps, Triton's shared memory, the
 * calling convention's trailing pointers, global scratch when the kernel needs it). */
#include "check.h"
#include "triton.h"

#include <cjson/cJSON.h>

static const char *dtype_of(const char *name, void *ud) {
  (void)ud;
  if (!strcmp(name, "x")) return "f32";
  if (!strcmp(name, "y")) return "bf16";
  return NULL; /* a scratch buffer without a dtype */
}

static triton_module module(int threads, int shared, long long scratch) {
  triton_module m = {0};
  m.ok = 1;
  snprintf(m.name, sizeof m.name, "softmax");
  m.num_warps = threads / 32;
  m.threads = threads;
  m.shared = shared;
  m.num_ctas = 1;
  m.nextra = 2;
  snprintf(m.extra[0].name, sizeof m.extra[0].name, "global_scratch");
  m.extra[0].bytes_per_program = scratch;
  m.extra[0].align = 128;
  snprintf(m.extra[1].name, sizeof m.extra[1].name, "profile_scratch");
  m.extra[1].align = 1;
  return m;
}

static cJSON *parse(const char *s) {
  cJSON *j = cJSON_Parse(s);
  CHECK(j != NULL);
  return j;
}

int main(void) {
  kevo_error err = {0};
  CHECK(!strcmp(triton_pointer_type("f32"), "*fp32"));
  CHECK(!strcmp(triton_pointer_type("bf16"), "*bf16"));
  CHECK(triton_pointer_type("f33") == NULL);

  cJSON *plan = parse("{\"kernels\":[{\"module\":0,\"name\":\"softmax\",\"grid\":[100,2,1],"
                      "\"block\":[256,1,1],\"args\":[{\"buf\":\"x\"},{\"buf\":\"y\"},"
                      "{\"i32\":100},{\"f32\":0.5},{\"i64\":7}]}]}");
  cJSON *launch = cJSON_GetArrayItem(cJSON_GetObjectItem(plan, "kernels"), 0);
  cJSON *sig = NULL;
  CHECK(triton_plan_signature(launch, dtype_of, NULL, &sig, &err) == KEVO_OK);
  char *text = cJSON_PrintUnformatted(sig);
  CHECK(text && !strcmp(text, "[\"*fp32\",\"*bf16\",\"i32\",\"fp32\",\"i64\"]"));
  free(text);
  cJSON_Delete(sig);

  /* no global scratch: two null pointers appended, block and shared from the module */
  triton_module m = module(256, 4096, 0);
  CHECK(triton_plan_finish(plan, launch, 0, &m, &err) == KEVO_OK);
  cJSON *args = cJSON_GetObjectItem(launch, "args");
  CHECK(cJSON_GetArraySize(args) == 7);
  CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(args, 5), "null")));
  CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(args, 6), "null")));
  CHECK(cJSON_GetObjectItem(launch, "shared")->valueint == 4096);
  CHECK(cJSON_GetArrayItem(cJSON_GetObjectItem(launch, "block"), 0)->valueint == 256);
  CHECK(cJSON_GetObjectItem(plan, "scratch") == NULL);
  /* a finished launch passes null args, which a signature refuses: it is built before */
  CHECK(triton_plan_signature(launch, dtype_of, NULL, &sig, &err) == KEVO_E_ARG);
  CHECK_STR_CONTAINS(err.msg, "null");
  cJSON_Delete(plan);

  /* global scratch: a zeroed buffer of bytes_per_program * programs, aligned */
  plan = parse("{\"kernels\":[{\"name\":\"softmax\",\"grid\":[10,3],\"args\":[{\"buf\":\"x\"}]}]}");
  launch = cJSON_GetArrayItem(cJSON_GetObjectItem(plan, "kernels"), 0);
  m = module(128, 0, 100);
  CHECK(triton_plan_finish(plan, launch, 2, &m, &err) == KEVO_OK);
  cJSON *scratch = cJSON_GetArrayItem(cJSON_GetObjectItem(plan, "scratch"), 0);
  CHECK(scratch &&
        !strcmp(cJSON_GetObjectItem(scratch, "name")->valuestring, "triton_global_scratch_2"));
  CHECK(scratch && cJSON_GetObjectItem(scratch, "bytes")->valuedouble == 3072); /* 3000 -> 128 */
  args = cJSON_GetObjectItem(launch, "args");
  CHECK(!strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(args, 1), "buf")->valuestring,
                "triton_global_scratch_2"));
  CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(args, 2), "null")));
  cJSON_Delete(plan);

  /* what Triton decides cannot be overridden by the launch */
  const char *wrong[] = {
      "{\"name\":\"softmax\",\"grid\":[1],\"block\":[128],\"args\":[]}",
      "{\"name\":\"softmax\",\"grid\":[1],\"shared\":99,\"args\":[]}",
      "{\"name\":\"other\",\"grid\":[1],\"args\":[]}",
  };
  const char *why[] = {"num_warps", "Triton's", "cubin's is 'softmax'"};
  for (int i = 0; i < 3; i++) {
    plan = parse("{}");
    launch = parse(wrong[i]);
    m = module(256, 0, 0);
    CHECK(triton_plan_finish(plan, launch, 0, &m, &err) == KEVO_E_LAUNCH);
    CHECK_STR_CONTAINS(err.msg, why[i]);
    cJSON_Delete(launch);
    cJSON_Delete(plan);
  }
  /* a cluster launch is not something the worker does */
  plan = parse("{}");
  launch = parse("{\"grid\":[1],\"args\":[]}");
  m = module(128, 0, 0);
  m.num_ctas = 2;
  CHECK(triton_plan_finish(plan, launch, 0, &m, &err) == KEVO_E_LAUNCH);
  cJSON_Delete(launch);
  /* an argument without a Triton type */
  launch = parse("{\"args\":[{\"buf\":\"partial\"}]}");
  CHECK(triton_plan_signature(launch, dtype_of, NULL, &sig, &err) == KEVO_E_ARG);
  CHECK_STR_CONTAINS(err.msg, "'partial'");
  cJSON_Delete(launch);
  cJSON_Delete(plan);
  CHECK_DONE();
}
