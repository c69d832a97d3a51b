/* eval_result.h: reading fields of an evaluation result (docs/architecture.md "Evaluation
 * result"), for the code that prints or explains one (eval_result.c). */
#ifndef KEVO_EVAL_RESULT_H
#define KEVO_EVAL_RESULT_H

typedef struct cJSON cJSON;

/* A result field: the number (NAN when absent or not a number) or the string ("" likewise). */
double eval_jnum(const cJSON *o, const char *key);
const char *eval_jstr(const cJSON *o, const char *key);

#endif
