/* eval_result.c: reading fields of an evaluation result (eval_result.h). */
#include "eval_result.h"

#include <cjson/cJSON.h>

#include <math.h>

double eval_jnum(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItem(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

const char *eval_jstr(const cJSON *o, const char *key) {
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(o, key));
  return s ? s : "";
}
