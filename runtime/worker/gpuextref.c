/* gpuextref.c: references computed outside the worker (docs/worker.md "External reference").
 * A PyTorch reference runs in its own process; the worker hands it a trial's inputs (`inputs`),
 * stores the outputs it computed in the host reference cache (`put_reference`), and an
 * evaluate request whose shapes say `reference: {"external": key}` judges candidates against
 * those cached outputs exactly as against a reference plan's. */
#include "gpueval_int.h"
#include "gpuextref.h"

#include <cjson/cJSON.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DRV (&e->g->drv)

/* A shape with only what wk_ref_key needs: its label and spec. */
static void shape_for_key(wk_eval *e, int index, wk_shape *s) {
  memset(s, 0, sizeof *s);
  s->index = index;
  s->spec = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(e->req, "shapes"), index);
  const char *label = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s->spec, "label"));
  snprintf(s->label, sizeof s->label, "%s", label ? label : "?");
}

cJSON *wk_missing_refs(wk_eval *e) {
  cJSON *missing = NULL;
  int nshapes = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e->req, "shapes"));
  wk_shape *s = malloc(sizeof *s);
  if (!s) return NULL;
  for (int i = 0; i < nshapes; i++)
    for (int trial = 0; trial < e->trials; trial++) {
      char key[KEVO_HASH_HEX];
      shape_for_key(e, i, s);
      wk_ref_key(e, s, trial, key);
      if (wk_refcache_get(e->g->refs, key)) continue;
      if (!missing) missing = cJSON_CreateArray();
      cJSON *m = cJSON_CreateObject();
      cJSON_AddNumberToObject(m, "shape", i);
      cJSON_AddStringToObject(m, "label", s->label);
      cJSON_AddNumberToObject(m, "trial", trial);
      cJSON_AddItemToArray(missing, m);
    }
  free(s);
  return missing;
}

/* Parses the request's tensors, shapes and seed (no modules) and its "shape" and "trial". */
static int parse_target(wk_eval *e, int *shape, int *trial) {
  e->no_modules = 1;
  if (wk_parse(e, NULL, 0)) return -1;
  const cJSON *sj = cJSON_GetObjectItemCaseSensitive(e->req, "shape");
  const cJSON *tj = cJSON_GetObjectItemCaseSensitive(e->req, "trial");
  int nshapes = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e->req, "shapes"));
  if (!cJSON_IsNumber(sj) || sj->valueint < 0 || sj->valueint >= nshapes || !cJSON_IsNumber(tj) ||
      tj->valueint < 0 || tj->valueint >= 1000)
    return wk_fail(e, "error", "verify",
                   "request: shape must index shapes (0 to %d) and trial be 0 to 999", nshapes - 1);
  *shape = sj->valueint;
  *trial = tj->valueint;
  return 0;
}

cJSON *kevo_gpu_inputs(kevo_gpu *g, const cJSON *req, kevo_blob *out, size_t *nout, int *fatal) {
  *nout = 0;
  *fatal = 0;
  wk_eval *e = calloc(1, sizeof *e);
  wk_shape *s = calloc(1, sizeof *s);
  cJSON *res = NULL;
  if (!e || !s) {
    free(e);
    free(s);
    return kevo_gpu_error_reply("E_NOMEM", "the worker is out of host memory");
  }
  e->g = g;
  e->req = req;
  e->cur_stage = "verify";
  int shape = 0, trial = 0;
  if (parse_target(e, &shape, &trial) == 0 && wk_shape_setup(e, s, shape, 1) == 0 &&
      wk_gen_inputs(e, s, 0, trial) == 0) {
    CUresult r = DRV->cuStreamSynchronize(g->stream);
    if (r) wk_cuda_fail(e, r, "drawing inputs");
    res = cJSON_CreateObject();
    cJSON *names = cJSON_AddArrayToObject(res, "tensors");
    for (int i = 0; !e->verdict && i < e->ntensors && *nout < KEVO_PROTO_MAX_BLOBS; i++) {
      if (e->tensors[i].output) continue;
      size_t bytes = s->set[0].t[i].numel * wk_dtype_size(e->tensors[i].dt);
      void *p = malloc(bytes ? bytes : 1);
      if (!p) {
        wk_fail(e, "error", "verify", "no host memory for input %s", e->tensors[i].name);
        break;
      }
      out[*nout] = (kevo_blob){p, bytes};
      ++*nout;
      r = DRV->cuMemcpyDtoH(p, s->set[0].t[i].ptr, bytes);
      if (r) wk_cuda_fail(e, r, "copying inputs to the host");
      cJSON_AddItemToArray(names, cJSON_CreateString(e->tensors[i].name));
    }
    cJSON_AddStringToObject(res, "label", s->label);
    cJSON_AddNumberToObject(res, "trial", trial);
  }
  if (e->verdict) {
    cJSON_Delete(res);
    for (size_t i = 0; i < *nout; i++)
      free(out[i].data);
    *nout = 0;
    res = kevo_gpu_error_reply(e->crashed ? "E_CRASH" : "E_PARSE", e->message);
  } else {
    cJSON_AddBoolToObject(res, "ok", 1);
  }
  if (!e->crashed) wk_shape_teardown(e, s);
  *fatal = e->crashed;
  free(e);
  free(s);
  return res;
}

cJSON *kevo_gpu_put_reference(kevo_gpu *g, const cJSON *req, const kevo_blob *blobs,
                              size_t nblobs) {
  wk_eval *e = calloc(1, sizeof *e);
  wk_shape *s = calloc(1, sizeof *s);
  void **bufs = NULL;
  cJSON *res = NULL;
  if (!e || !s) {
    free(e);
    free(s);
    return kevo_gpu_error_reply("E_NOMEM", "the worker is out of host memory");
  }
  e->g = g;
  e->req = req;
  e->cur_stage = "verify";
  int shape = 0, trial = 0;
  if (parse_target(e, &shape, &trial)) goto out;
  if (!e->external) {
    wk_fail(e, "error", "verify", "request: put_reference needs shapes with reference.external");
    goto out;
  }
  shape_for_key(e, shape, s);
  const cJSON *numel = cJSON_GetObjectItemCaseSensitive(s->spec, "numel");
  bufs = calloc((size_t)e->ntensors, sizeof *bufs);
  size_t k = 0, total = 0;
  for (int i = 0; bufs && i < e->ntensors; i++) {
    if (!e->tensors[i].output) continue;
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(numel, e->tensors[i].name);
    size_t want = cJSON_IsNumber(n) && n->valuedouble >= 0
                      ? (size_t)n->valuedouble * wk_dtype_size(e->tensors[i].dt)
                      : 0;
    if (k >= nblobs || blobs[k].size != want || !cJSON_IsNumber(n)) {
      wk_fail(e, "error", "verify",
              "request: output %s of shape %s needs %zu bytes in blob %zu (%zu given, %zu blobs)",
              e->tensors[i].name, s->label, want, k, k < nblobs ? blobs[k].size : 0, nblobs);
      goto out;
    }
    bufs[i] = wk_host_alloc(g, want ? want : 1); /* the cache releases what it holds so */
    if (!bufs[i]) break;
    memcpy(bufs[i], blobs[k].data, want);
    total += want;
    k++;
  }
  if (!bufs || k == 0 || k != nblobs) {
    wk_fail(e, "error", "verify",
            bufs ? "request: %zu blobs given, one per output expected" : "no host memory (%zu)",
            nblobs);
    goto out;
  }
  char key[KEVO_HASH_HEX];
  wk_ref_key(e, s, trial, key);
  wk_refcache_put(g->refs, key, bufs, (size_t)e->ntensors, total);
  bufs = NULL;
  res = cJSON_CreateObject();
  cJSON_AddBoolToObject(res, "ok", 1);
  cJSON_AddStringToObject(res, "label", s->label);
  cJSON_AddNumberToObject(res, "trial", trial);
  cJSON_AddNumberToObject(res, "bytes", (double)total);
out:
  if (bufs)
    for (int i = 0; i < e->ntensors; i++)
      if (bufs[i]) wk_host_release(bufs[i], g);
  free(bufs);
  if (!res) res = kevo_gpu_error_reply("E_PARSE", e->message);
  free(e);
  free(s);
  return res;
}
