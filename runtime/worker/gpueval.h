/* gpueval.h: the evaluator worker's GPU half. Owns one device's CUDA context; evaluates
 * candidates (verify, bench) as docs/architecture.md ("Evaluator worker protocol",
 * "Evaluation result") and docs/worker.md describe. Knows nothing of Lua; never prints. */
#ifndef KEVO_GPUEVAL_H
#define KEVO_GPUEVAL_H

#include <stddef.h>

#include "proto.h"
#include "status.h"

typedef struct kevo_gpu kevo_gpu;

/* Loads the driver, opens device `ordinal`, makes its primary context current, sets the
 * context limits, compiles the worker's kernels and measures the copy bandwidth.
 * KEVO_E_NOGPU when there is no driver or no device; KEVO_E_CUDA for other failures. */
int kevo_gpu_open(int ordinal, kevo_gpu **out, kevo_error *err);
void kevo_gpu_close(kevo_gpu *g);

/* The "device" object of a hello reply (name, cc, sms, mem_bytes, l2_bytes, driver,
 * copy_gbps, peak_tflops, clock_mhz). The caller owns it. */
cJSON *kevo_gpu_device_json(const kevo_gpu *g);

/* A reply that failed as a whole: {"ok": false, "error": "CODE: message"}. */
cJSON *kevo_gpu_error_reply(const char *code, const char *msg);

/* Evaluates one `evaluate` request (its header and blobs). Returns the evaluation result object
 * (never NULL; verdict "error" for a malformed request). Sets *fatal when the CUDA context is
 * lost (verdict "crash"): the caller replies, then exits. */
cJSON *kevo_gpu_evaluate(kevo_gpu *g, const cJSON *req, const kevo_blob *blobs, size_t nblobs,
                         int *fatal);

/* The `inputs` op: the inputs the evaluate request in `req` (tensors, shapes, verify.seed) draws
 * for shape req.shape, trial req.trial, copied to out[] (one malloc'd blob per input, in tensor
 * order; the caller frees them). Returns the reply ({"ok":true,"tensors":[names]} or
 * {"ok":false,"error"}); *fatal as for kevo_gpu_evaluate. */
cJSON *kevo_gpu_inputs(kevo_gpu *g, const cJSON *req, kevo_blob *out, size_t *nout, int *fatal);

/* The `put_reference` op: stores blobs (one per output, in tensor order) as the reference
 * outputs of (req.shape, req.trial) in the host cache, under the key evaluate computes for
 * shapes whose reference is {"external": key}. Returns the reply. */
cJSON *kevo_gpu_put_reference(kevo_gpu *g, const cJSON *req, const kevo_blob *blobs, size_t nblobs);

#endif
