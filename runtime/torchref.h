/* torchref.h: the driver's side of the PyTorch bridge (python/kb_bridge.py, docs/kbench.md).
 *
 * KernelBench-format problems have a PyTorch module as their reference. The bridge runs it in
 * a python3 with torch ($KEVO_PYTHON, else python3 on PATH), in a child process with a
 * scrubbed environment that dies with the driver. It never sees a candidate: kevo's worker
 * draws the trial inputs, the bridge computes the reference outputs for exactly those inputs,
 * and they go back into the worker's reference cache (torchref_supply); the worker then judges
 * the candidate against them as against any reference. The bridge also times eager PyTorch and
 * torch.compile on the benchmark inputs (torchref_baseline). */
#ifndef KEVO_TORCHREF_H
#define KEVO_TORCHREF_H

#include <stddef.h>

#include "proto.h"
#include "status.h"

typedef struct torchref torchref;

typedef struct torchref_opts {
  const char *python;     /* NULL: $KEVO_PYTHON, $KEVO_TORCH_PYTHON, else python3 on PATH */
  double start_timeout_s; /* describe, or importing torch and building the model; 0: 300 */
  const char *gpu;        /* CUDA_VISIBLE_DEVICES for the bridge; NULL: the driver's */
} torchref_opts;

/* The interpreter: opts->python, $KEVO_PYTHON (kevo's one python variable, Triton's too),
 * $KEVO_TORCH_PYTHON (its older name here, read only when $KEVO_PYTHON is unset), or python3 on
 * PATH (a name without '/' is looked up on PATH). KEVO_E_UNSUPPORTED naming the setting that
 * chose it and what to set when none is found; a python without torch fails at the bridge's
 * start with the same advice. */
int torchref_find_python(const char *given, char *out, size_t n, kevo_error *err);

/* Runs `kb_bridge.py describe PROBLEM` and returns its JSON text (caller frees). KEVO_E_RECIPE
 * when the file is not a usable problem (no Model, no get_inputs, import fails: the bridge's
 * words), KEVO_E_UNSUPPORTED when there is no python or no torch, KEVO_E_TIMEOUT. */
int torchref_describe(const char *problem, const torchref_opts *o, char **json, kevo_error *err);

/* Starts `kb_bridge.py serve PROBLEM`. The first call may take a while (torch import). */
int torchref_open(const char *problem, const torchref_opts *o, torchref **out, kevo_error *err);
/* Says bye, then kills and reaps the bridge and removes its directory. NULL is fine. */
void torchref_close(torchref *t);

/* One request to the bridge and its reply (caller frees with kevo_frame_free). A reply with
 * "ok": false is KEVO_E_RECIPE with the bridge's error (the reply is freed then). A bridge that
 * dies or misses the deadline is killed: KEVO_E_UNSUPPORTED / KEVO_E_TIMEOUT, with the tail of
 * its log; the handle is then closed for good (further calls fail). */
int torchref_call(torchref *t, cJSON *req, const kevo_blob *blobs, size_t nblobs, double timeout_s,
                  kevo_frame *reply, kevo_error *err);

/* How the driver reaches the worker (evalclient_request with a deadline, or a test's pipe). */
typedef int (*torchref_worker_fn)(void *ctx, cJSON *req, const kevo_blob *blobs, size_t nblobs,
                                  kevo_frame *reply, kevo_error *err);

/* Fills the worker's reference cache for the (shape, trial) pairs in `missing` (the array an
 * evaluate reply lists: [{"shape": i, "trial": t}, ...]) of evaluate request `eval_req`: for
 * each, the worker's `inputs`, the bridge's `reference`, the worker's `put_reference`.
 * KEVO_E_RECIPE when the reference is degenerate: identical outputs for every trial of a
 * shape (any kernel that ignores its inputs would pass). */
int torchref_supply(torchref *t, torchref_worker_fn fn, void *ctx, const cJSON *eval_req,
                    const cJSON *missing, kevo_error *err);

/* Times eager PyTorch and torch.compile on the benchmark shape's last-trial inputs (those the
 * worker times the candidate on). *out: {"eager": {median_ms, ...}, "compiled": {...},
 * "compile_s", "compile_error"} (caller frees). */
int torchref_baseline(torchref *t, torchref_worker_fn fn, void *ctx, const cJSON *eval_req,
                      cJSON **out, kevo_error *err);

/* For the evaluator: turns evaluate request `req` into one with an external reference: only
 * `candidate` modules stay, and every shape's "reference" becomes {"external": key}. */
void torchref_make_external(cJSON *req, const char *key);

/* For the evaluator: adds a baseline (torchref_baseline's object) to a result's bench object:
 * eager_ms, compiled_ms, compile_s, ref_median_ms (= eager), speedup (over eager) and
 * speedup_compiled; or baseline_error. */
void torchref_add_baseline(cJSON *bench, const cJSON *baseline);

#endif
