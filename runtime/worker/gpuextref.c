/* gpuextref.c: references computed outside the worker (docs/worker.md "External reference").
 * A PyTorch reference runs in its own process; the worker hands it a trial's inputs (`inputs`),
 * stores the outputs it computed in the reference cache (`put_reference`), and an evaluate
 * request whose shapes say `reference: {"external": key}` judges candidates against those
 * cached outputs exactly as against a reference plan's.
 *
 * Tensors cross either as blobs in the frames (host copies, at most KEVO_PROTO_MAX_BLOB each)
 * or, with "share": "ipc", not at all: the inputs stay in the worker's device memory and the
 * reference process maps them through CUDA IPC handles; its outputs stay in its own device
 * memory and the worker maps them only to copy them into the reference set right before a
 * comparison (wk_ipc_fetch), so no candidate ever runs while they are mapped. */
#include "gpueval_int.h"
#include "gpuextref.h"

#include <cjson/cJSON.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DRV (&e->g->drv)

/* A shape with only what wk_ref_key needs: its label and spec (the rest is not touched: a
 * wk_shape is megabytes, and this runs for every trial of every shape). */
static void shape_for_key(wk_eval *e, int index, wk_shape *s) {
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
      if (wk_refcache_get(e->g->refs, key, NULL)) continue;
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

static void to_hex(const unsigned char *p, size_t n, char *out) {
  for (size_t i = 0; i < n; i++)
    snprintf(out + 2 * i, 3, "%02x", p[i]);
}

static int from_hex(const char *s, unsigned char *p, size_t n) {
  if (!s || strlen(s) != 2 * n) return -1;
  for (size_t i = 0; i < n; i++) {
    unsigned v;
    if (sscanf(s + 2 * i, "%2x", &v) != 1) return -1;
    p[i] = (unsigned char)v;
  }
  return 0;
}

void kevo_gpu_release_lent(kevo_gpu *g) {
  if (!g || !g->lent) return;
  wk_eval e = {.g = g};
  wk_shape_teardown(&e, g->lent);
  free(g->lent);
  g->lent = NULL;
}

/* The inputs of set 0 as IPC handles ({name, handle, bytes} each, in tensor order); the shape
 * is lent (kept allocated) until the next request. */
static cJSON *share_inputs(wk_eval *e, wk_shape *s) {
  cJSON *list = cJSON_CreateArray();
  for (int i = 0; i < e->ntensors; i++) {
    if (e->tensors[i].output) continue;
    CUipcMemHandle h;
    memset(&h, 0, sizeof h);
    CUresult r = DRV->cuIpcGetMemHandle(&h, s->set[0].t[i].ptr);
    if (r) {
      wk_fail(e, "error", "verify", "E_IPC: no IPC handle for input %s: %s", e->tensors[i].name,
              cudrv_errname(DRV, r));
      break;
    }
    char hex[2 * sizeof h.reserved + 1];
    to_hex((const unsigned char *)h.reserved, sizeof h.reserved, hex);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", e->tensors[i].name);
    cJSON_AddStringToObject(o, "handle", hex);
    cJSON_AddNumberToObject(o, "bytes",
                            (double)(s->set[0].t[i].numel * wk_dtype_size(e->tensors[i].dt)));
    cJSON_AddItemToArray(list, o);
  }
  return list;
}

int wk_ipc_fetch(wk_eval *e, wk_set *to, void **refs) {
  enum { MAX_OPEN = 64 };
  struct {
    CUipcMemHandle h;
    CUdeviceptr base;
  } open[MAX_OPEN];
  int nopen = 0, rc = 0;
  CUresult r = DRV->cuStreamSynchronize(e->g->stream);
  for (int i = 0; !r && i < e->ntensors; i++) {
    const wk_ipc_ref *x = refs[i];
    if (!e->tensors[i].output || !x) continue;
    size_t want = to->t[i].numel * wk_dtype_size(e->tensors[i].dt);
    if (x->bytes != want) {
      rc = wk_fail(e, "error", "verify",
                   "E_NOREF: the reference process's output %s holds %llu bytes, %zu expected",
                   e->tensors[i].name, (unsigned long long)x->bytes, want);
      break;
    }
    int k = 0; /* one mapping per allocation: outputs may share one */
    while (k < nopen && memcmp(&open[k].h, &x->handle, sizeof x->handle))
      k++;
    if (k == nopen) {
      if (nopen == MAX_OPEN) {
        rc = wk_fail(e, "error", "verify", "E_IPC: more than %d reference allocations", MAX_OPEN);
        break;
      }
      r = DRV->cuIpcOpenMemHandle(&open[k].base, x->handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
      if (r) {
        rc = wk_fail(e, "error", "verify",
                     "E_NOREF: cannot map the reference process's output %s (%s): it is gone "
                     "(the bridge dropped or lost it)",
                     e->tensors[i].name, cudrv_errname(DRV, r));
        r = CUDA_SUCCESS;
        break;
      }
      open[k].h = x->handle;
      nopen++;
    }
    if (want)
      r = DRV->cuMemcpyDtoDAsync(to->t[i].ptr, open[k].base + x->offset, want, e->g->stream);
  }
  if (!r) r = DRV->cuStreamSynchronize(e->g->stream);
  for (int k = 0; k < nopen; k++)
    DRV->cuIpcCloseMemHandle(open[k].base);
  if (r && !rc) rc = wk_cuda_fail(e, r, "copying the reference outputs from the bridge");
  return rc;
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
  const char *share = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "share"));
  int ipc = share && !strcmp(share, "ipc");
  if (parse_target(e, &shape, &trial) == 0 && wk_shape_setup(e, s, shape, 1) == 0 &&
      wk_gen_inputs(e, s, 0, trial) == 0) {
    CUresult r = DRV->cuStreamSynchronize(g->stream);
    if (r) wk_cuda_fail(e, r, "drawing inputs");
    res = cJSON_CreateObject();
    cJSON *names = cJSON_AddArrayToObject(res, "tensors");
    if (ipc && !e->verdict) cJSON_AddItemToObject(res, "ipc", share_inputs(e, s));
    for (int i = 0; !e->verdict && i < e->ntensors; i++) {
      if (e->tensors[i].output) continue;
      if (ipc) {
        cJSON_AddItemToArray(names, cJSON_CreateString(e->tensors[i].name));
        continue;
      }
      if (*nout == KEVO_PROTO_MAX_BLOBS) {
        wk_fail(e, "error", "verify", "more than %d inputs: ask with \"share\": \"ipc\"",
                KEVO_PROTO_MAX_BLOBS);
        break;
      }
      size_t bytes = s->set[0].t[i].numel * wk_dtype_size(e->tensors[i].dt);
      if (bytes > KEVO_PROTO_MAX_BLOB) {
        wk_fail(e, "error", "verify",
                "input %s has %zu bytes, more than a frame's blob carries: ask with \"share\": "
                "\"ipc\"",
                e->tensors[i].name, bytes);
        break;
      }
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
  *fatal = e->crashed;
  if (ipc && !e->verdict) { /* lent until the next request */
    g->lent = s;
    s = NULL;
  } else if (!e->crashed) {
    wk_shape_teardown(e, s);
  }
  free(e);
  free(s);
  return res;
}

/* put_reference's "ipc": [{handle, offset, bytes}, ...], one per output in tensor order, into
 * bufs[i] (wk_ipc_ref, malloc'd); sizes are checked against numel x dtype size. */
static int ipc_records(wk_eval *e, wk_shape *s, const cJSON *ipc, void **bufs) {
  const cJSON *numel = cJSON_GetObjectItemCaseSensitive(s->spec, "numel");
  const cJSON *x = cJSON_IsArray(ipc) ? ipc->child : NULL;
  for (int i = 0; i < e->ntensors; i++) {
    if (!e->tensors[i].output) continue;
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(numel, e->tensors[i].name);
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(x, "offset");
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(x, "bytes");
    double want = cJSON_IsNumber(n) ? n->valuedouble * (double)wk_dtype_size(e->tensors[i].dt) : -1;
    wk_ipc_ref *r = bufs[i] = calloc(1, sizeof *r);
    if (!r) return wk_fail(e, "error", "verify", "no host memory");
    if (!x || !cJSON_IsNumber(by) || by->valuedouble != want ||
        (off && (!cJSON_IsNumber(off) || off->valuedouble < 0)) ||
        from_hex(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "handle")),
                 (unsigned char *)r->handle.reserved, sizeof r->handle.reserved))
      return wk_fail(e, "error", "verify",
                     "request: ipc record for output %s of shape %s needs a handle (128 hex "
                     "digits), offset and bytes = %.0f",
                     e->tensors[i].name, s->label, want);
    r->offset = off ? (uint64_t)off->valuedouble : 0;
    r->bytes = (uint64_t)want;
    x = x->next;
  }
  if (x) return wk_fail(e, "error", "verify", "request: more ipc records than outputs");
  return 0;
}

/* Maps each record's allocation once and unmaps it: a reference the worker cannot map fails
 * here (E_IPC: the driver then sends tensors through the pipes), not in every evaluation. */
static int ipc_probe(wk_eval *e, void **bufs) {
  for (int i = 0; i < e->ntensors; i++) {
    const wk_ipc_ref *x = bufs[i];
    if (!x) continue;
    CUdeviceptr base = 0;
    CUresult r = DRV->cuIpcOpenMemHandle(&base, x->handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (r)
      return wk_fail(e, "error", "verify",
                     "E_IPC: cannot map output %s of the reference process: %s", e->tensors[i].name,
                     cudrv_errname(DRV, r));
    DRV->cuIpcCloseMemHandle(base);
    break; /* outputs of one reference share one allocation (kb_bridge.py) */
  }
  return 0;
}

cJSON *kevo_gpu_put_reference(kevo_gpu *g, const cJSON *req, const kevo_blob *blobs,
                              size_t nblobs) {
  wk_eval *e = calloc(1, sizeof *e);
  wk_shape *s = calloc(1, sizeof *s);
  void **bufs = NULL;
  cJSON *res = NULL;
  const cJSON *ipc = cJSON_GetObjectItemCaseSensitive(req, "ipc");
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
  if (ipc) { /* the outputs stay in the reference process: records of where */
    if (!bufs || ipc_records(e, s, ipc, bufs) || ipc_probe(e, bufs)) goto out;
    char key[KEVO_HASH_HEX];
    wk_ref_key(e, s, trial, key);
    wk_refcache_put(g->refs, key, bufs, (size_t)e->ntensors, 0, 1);
    bufs = NULL;
    res = cJSON_CreateObject();
    cJSON_AddBoolToObject(res, "ok", 1);
    cJSON_AddStringToObject(res, "label", s->label);
    cJSON_AddNumberToObject(res, "trial", trial);
    cJSON_AddStringToObject(res, "share", "ipc");
    goto out;
  }
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
  wk_refcache_put(g->refs, key, bufs, (size_t)e->ntensors, total, 0);
  bufs = NULL;
  res = cJSON_CreateObject();
  cJSON_AddBoolToObject(res, "ok", 1);
  cJSON_AddStringToObject(res, "label", s->label);
  cJSON_AddNumberToObject(res, "trial", trial);
  cJSON_AddNumberToObject(res, "bytes", (double)total);
out:
  for (int i = 0; bufs && i < e->ntensors; i++) {
    if (bufs[i] && ipc)
      free(bufs[i]);
    else if (bufs[i])
      wk_host_release(bufs[i], g);
  }
  free(bufs);
  if (!res) res = kevo_gpu_error_reply("E_PARSE", e->message);
  free(e);
  free(s);
  return res;
}
