/* gpueval.h: the evaluator worker's GPU half: evaluates candidates (verify, bench) on a device
 * opened with gpudevice.h, as docs/architecture.md ("Evaluator worker protocol", "Evaluation
 * result") and docs/worker.md describe. Knows nothing of Lua; never prints. */
#ifndef KEVO_GPUEVAL_H
#define KEVO_GPUEVAL_H

#include <stddef.h>

#include "gpucommon.h"
#include "proto.h"

/* Evaluates one `evaluate` request (its header and blobs). Returns the evaluation result object
 * (never NULL; verdict "error" for a malformed request). Sets *fatal when the CUDA context is
 * lost (verdict "crash"): the caller replies, then exits. */
cJSON *kevo_gpu_evaluate(kevo_gpu *g, const cJSON *req, const kevo_blob *blobs, size_t nblobs,
                         int *fatal);

#endif
