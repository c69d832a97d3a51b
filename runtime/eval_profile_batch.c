/* eval_profile_batch.c: many candidates' evaluate requests merged into one profile request
 * (eval_profile_batch.h). */
#include "eval_profile_batch.h"
#include "eval_profile.h"
#include "eval_result.h"

#include <cjson/cJSON.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_MODULES = 16 }; /* the worker's WK_MAX_MODULES */

struct profbatch {
  pthread_mutex_t mu; /* the pool's threads add at once */
  cJSON *req;         /* the merged request: the first candidate's tensors, shapes[0], verify */
  cJSON *plans;       /* profile.plans (owned by req) */
  kevo_blob blobs[MAX_MODULES];
  size_t nblobs;
  int with_ref, have_ref;
  size_t n;
  char **why;    /* per candidate: why it is not in the batch (malloc'd), or NULL */
  char **reason; /* per candidate: the failure's reason word */
};

profbatch *profbatch_new(size_t n, int with_reference) {
  profbatch *pb = calloc(1, sizeof *pb);
  if (!pb) return NULL;
  pb->n = n;
  pb->with_ref = with_reference;
  pthread_mutex_init(&pb->mu, NULL);
  pb->why = calloc(n ? n : 1, sizeof *pb->why);
  pb->reason = calloc(n ? n : 1, sizeof *pb->reason);
  if (!pb->why || !pb->reason) {
    profbatch_free(pb);
    return NULL;
  }
  return pb;
}

void profbatch_free(profbatch *pb) {
  if (!pb) return;
  cJSON_Delete(pb->req);
  for (size_t i = 0; i < pb->nblobs; i++)
    free(pb->blobs[i].data);
  for (size_t i = 0; pb->why && i < pb->n; i++) {
    free(pb->why[i]);
    free(pb->reason[i]);
  }
  free(pb->why);
  free(pb->reason);
  pthread_mutex_destroy(&pb->mu);
  free(pb);
}

static void skip_locked(profbatch *pb, size_t i, const char *reason, const char *why) {
  if (i >= pb->n || pb->why[i]) return;
  pb->why[i] = strdup(why ? why : "not profiled");
  pb->reason[i] = strdup(reason ? reason : "failed");
}

void profbatch_skip(profbatch *pb, size_t i, const char *reason, const char *why) {
  pthread_mutex_lock(&pb->mu);
  skip_locked(pb, i, reason, why);
  pthread_mutex_unlock(&pb->mu);
}

/* A copy of plan p with every kernel's module index moved by `by`. */
static cJSON *moved_plan(const cJSON *p, int by) {
  cJSON *c = cJSON_Duplicate(p, 1), *k;
  cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(c, "kernels")) {
    cJSON *m = cJSON_GetObjectItemCaseSensitive(k, "module");
    if (cJSON_IsNumber(m)) cJSON_SetNumberValue(m, m->valuedouble + by);
  }
  return c;
}

static int add_blob(profbatch *pb, const kevo_blob *b, const char *role) {
  void *copy = malloc(b->size ? b->size : 1);
  if (!copy) return -1;
  memcpy(copy, b->data, b->size);
  pb->blobs[pb->nblobs] = (kevo_blob){copy, b->size};
  cJSON *m = cJSON_CreateObject();
  cJSON_AddNumberToObject(m, "blob", (double)pb->nblobs);
  cJSON_AddStringToObject(m, "role", role);
  cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(pb->req, "modules"), m);
  return (int)pb->nblobs++;
}

static void add_plan(profbatch *pb, const char *label, const char *role, cJSON *plan) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "label", label);
  cJSON_AddStringToObject(o, "role", role);
  cJSON_AddItemToObject(o, "plan", plan);
  cJSON_AddItemToArray(pb->plans, o);
}

/* The merged request's frame, from the first candidate's request: tensors, verify (the seed),
 * shapes[0] without its plans. */
static void start(profbatch *pb, const cJSON *req) {
  pb->req = cJSON_CreateObject();
  cJSON_AddStringToObject(pb->req, "op", "profile");
  cJSON_AddArrayToObject(pb->req, "modules");
  static const char *const keep[] = {"tensors", "verify", NULL};
  for (int i = 0; keep[i]; i++) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(req, keep[i]);
    if (x) cJSON_AddItemToObject(pb->req, keep[i], cJSON_Duplicate(x, 1));
  }
  cJSON *s0 =
      cJSON_Duplicate(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(req, "shapes"), 0), 1);
  cJSON_DeleteItemFromObjectCaseSensitive(s0, "candidate");
  cJSON_DeleteItemFromObjectCaseSensitive(s0, "reference");
  cJSON_DeleteItemFromObjectCaseSensitive(s0, "stress");
  cJSON *shapes = cJSON_AddArrayToObject(pb->req, "shapes");
  cJSON_AddItemToArray(shapes, s0);
  cJSON *prof = cJSON_AddObjectToObject(pb->req, "profile");
  pb->plans = cJSON_AddArrayToObject(prof, "plans");
}

static void add_locked(profbatch *pb, size_t i, const cJSON *req, const kevo_blob *blobs, int ncand,
                       int has_ref) {
  if (i >= pb->n || pb->why[i]) return;
  if (!pb->req) start(pb, req);
  const cJSON *s0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(req, "shapes"), 0);
  int want = ncand + (pb->with_ref && has_ref && !pb->have_ref);
  if (pb->nblobs + (size_t)want > MAX_MODULES) {
    skip_locked(pb, i, "failed",
                "the batch is full (the worker loads 16 modules per request): profile fewer "
                "candidates at once");
    return;
  }
  if (pb->with_ref && has_ref && !pb->have_ref) {
    int at = add_blob(pb, &blobs[ncand], "reference");
    if (at >= 0) {
      /* the candidate's request has the reference at module ncand */
      add_plan(pb, "reference", "reference",
               moved_plan(cJSON_GetObjectItemCaseSensitive(s0, "reference"), at - ncand));
      pb->have_ref = 1;
    }
  }
  int first = -1;
  for (int k = 0; k < ncand; k++) {
    int at = add_blob(pb, &blobs[k], "candidate");
    if (k == 0) first = at;
    if (at < 0) first = -1;
  }
  if (first < 0) {
    skip_locked(pb, i, "failed", "no memory for the candidate's modules");
    return;
  }
  char label[32];
  snprintf(label, sizeof label, "c%zu", i);
  add_plan(pb, label, "candidate",
           moved_plan(cJSON_GetObjectItemCaseSensitive(s0, "candidate"), first));
}

void profbatch_add(profbatch *pb, size_t i, const cJSON *req, const kevo_blob *blobs, int ncand,
                   int has_ref) {
  pthread_mutex_lock(&pb->mu);
  add_locked(pb, i, req, blobs, ncand, has_ref);
  pthread_mutex_unlock(&pb->mu);
}

void profbatch_send(profbatch *pb, profbatch_request_fn request, void *self, double deadline_ms,
                    const char *const *bounds, cJSON **profiles) {
  cJSON *reply_hdr = NULL;
  kevo_frame reply = {0};
  int sent = 0;
  if (pb->req && cJSON_GetArraySize(pb->plans) > 0) {
    cJSON_AddNumberToObject(cJSON_GetObjectItemCaseSensitive(pb->req, "profile"), "deadline_ms",
                            deadline_ms);
    kevo_error err = {0};
    int rc = request(self, pb->req, pb->blobs, pb->nblobs, deadline_ms / 1000 + 15, &reply, &err);
    sent = 1;
    if (rc) {
      reply_hdr = cJSON_CreateObject();
      cJSON_AddBoolToObject(reply_hdr, "ok", 0);
      cJSON_AddStringToObject(reply_hdr, "reason",
                              rc == KEVO_E_TIMEOUT ? "timeout"
                              : rc == KEVO_E_NOGPU ? "no_gpu"
                                                   : "failed");
      char msg[2300];
      snprintf(msg, sizeof msg, "%s: %s", kevo_code(rc), err.msg);
      cJSON_AddStringToObject(reply_hdr, "error", msg);
    } else {
      reply_hdr = reply.header;
      reply.header = NULL;
      kevo_frame_free(&reply);
    }
  }
  const cJSON *ref = reply_hdr ? eval_profile_plan(reply_hdr, "reference") : NULL;
  for (size_t i = 0; i < pb->n; i++) {
    if (pb->why[i] || !sent) {
      profiles[i] = cJSON_CreateObject();
      cJSON_AddBoolToObject(profiles[i], "ok", 0);
      cJSON_AddStringToObject(profiles[i], "reason", pb->reason[i] ? pb->reason[i] : "failed");
      cJSON_AddStringToObject(profiles[i], "error", pb->why[i] ? pb->why[i] : "not profiled");
      continue;
    }
    char label[32];
    snprintf(label, sizeof label, "c%zu", i);
    profiles[i] = eval_profile_object(reply_hdr, eval_profile_plan(reply_hdr, label), ref,
                                      bounds ? bounds[i] : NULL);
  }
  cJSON_Delete(reply_hdr);
}
