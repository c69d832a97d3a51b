/* gpuextref.h: the ops that serve references computed outside the worker (gpuextref.c). */
#ifndef KEVO_GPUEXTREF_H
#define KEVO_GPUEXTREF_H

#include <stddef.h>

#include "gpucommon.h"
#include "proto.h"

/* The `inputs` op: the inputs the evaluate request in `req` (tensors, shapes, verify.seed) draws
 * for shape req.shape, trial req.trial, copied to out[] (one malloc'd blob per input, in tensor
 * order; the caller frees them). Returns the reply ({"ok":true,"tensors":[names]} or
 * {"ok":false,"error"}); *fatal as for kevo_gpu_evaluate. With req.share = "ipc" no blob: the
 * reply's "ipc" lists {name, handle (CUDA IPC, hex), bytes} per input, and the inputs stay
 * allocated until kevo_gpu_release_lent. */
cJSON *kevo_gpu_inputs(kevo_gpu *g, const cJSON *req, kevo_blob *out, size_t *nout, int *fatal);

/* The `put_reference` op: stores blobs (one per output, in tensor order) as the reference
 * outputs of (req.shape, req.trial) in the host cache, under the key evaluate computes for
 * shapes whose reference is {"external": key}. Returns the reply. */
cJSON *kevo_gpu_put_reference(kevo_gpu *g, const cJSON *req, const kevo_blob *blobs, size_t nblobs);
/* With req.ipc = [{handle, offset, bytes}, ...] (one per output) instead of blobs, it stores
 * where the outputs live in the reference process; they are mapped only to be copied into the
 * reference set before each comparison. */

/* Frees the inputs the last `inputs` request with share = "ipc" lent; called before every
 * request (the reference process has unmapped them by then). */
void kevo_gpu_release_lent(kevo_gpu *g);

#endif
