/* proto.h: the driver <-> evaluator worker wire format.
 *
 * A frame is: u32 little-endian length of a JSON header, the header (UTF-8 JSON object), then
 * the blobs it announces in "blobs": [len, ...], back to back. Plain data only: nothing in a
 * frame is executed on decode. The same frames can later travel over a queue between hosts. */
#ifndef KEVO_PROTO_H
#define KEVO_PROTO_H

#include <stddef.h>

#include "status.h"

typedef struct cJSON cJSON;

enum {
  KEVO_PROTO_MAX_HEADER = 16 << 20, /* bytes of JSON in one frame */
  KEVO_PROTO_MAX_BLOBS = 64,        /* blobs in one frame */
  /* tensors (inputs and outputs) of one evaluate request: the worker refuses more, and the
   * driver refuses a recipe with more before it asks (a KernelBench level-3 model passes its
   * parameters and buffers as inputs: MobileNetV2 has 316 tensors, DenseNet201 over 1000) */
  KEVO_PROTO_MAX_TENSORS = 4096,
  /* launches in one plan, and arguments of one launch: the launch chunk's resolver (launch.c)
   * and the worker (gpuplan.c) hold plans to the same limits; 512 arguments of 8 bytes fill
   * the 4 KiB of kernel parameters every CUDA version allows */
  KEVO_PROTO_MAX_KERNELS = 64,
  KEVO_PROTO_MAX_ARGS = 512,
};
#define KEVO_PROTO_MAX_BLOB ((size_t)1 << 30) /* bytes in one blob */

/* The verdicts of an evaluation result (docs/architecture.md "Evaluation result"), "ok" first,
 * then the failures in the order a run's summary lists them. The one list of them: C writes
 * these names, Lua reads the list as require "kevo.verdict", and tests/lua/test_verdicts.lua
 * checks that the C and Lua sources judge with no other name. */
typedef struct kevo_verdict {
  const char *name;    /* "compile_error" */
  const char *meaning; /* one line */
} kevo_verdict;
extern const kevo_verdict kevo_verdicts[]; /* ends with a NULL name */

typedef struct kevo_blob {
  void *data;
  size_t size;
} kevo_blob;

typedef struct kevo_frame {
  cJSON *header; /* owned */
  size_t nblobs;
  kevo_blob blobs[KEVO_PROTO_MAX_BLOBS]; /* owned */
} kevo_frame;

/* Writes header (its "blobs" member is set here from the blob sizes) and the blobs to fd.
 * Retries on EINTR and short writes. KEVO_E_IO if the peer is gone (EPIPE). */
int kevo_frame_write(int fd, cJSON *header, const kevo_blob *blobs, size_t nblobs, kevo_error *err);
/* The same with a time limit, for a non-blocking fd: KEVO_E_TIMEOUT once timeout_ms pass with
 * the frame not all written (timeout_ms < 0: no limit). Both block SIGPIPE while they write: a
 * reader that is gone is KEVO_E_IO, never a signal that kills the writer. */
int kevo_frame_send(int fd, cJSON *header, const kevo_blob *blobs, size_t nblobs, int timeout_ms,
                    kevo_error *err);

/* Reads one frame from fd. timeout_ms < 0 waits forever; otherwise KEVO_E_TIMEOUT once that
 * many milliseconds pass with the frame incomplete. KEVO_E_IO on EOF (peer died),
 * KEVO_E_PARSE on a malformed frame. The caller frees with kevo_frame_free. */
int kevo_frame_read(int fd, kevo_frame *out, int timeout_ms, kevo_error *err);
void kevo_frame_free(kevo_frame *f);

/* Frames without blobs whose header the caller encodes and decodes itself (the strategy
 * process's link, where Lua holds the JSON text): send_text writes text (a JSON object with no
 * "blobs") as one frame; read_text returns the next frame's header text (malloc'd,
 * NUL-terminated; the caller frees) without parsing it, refusing one over max_len bytes
 * (KEVO_E_PARSE). Timeouts and errors as kevo_frame_send and kevo_frame_read. */
int kevo_frame_send_text(int fd, const char *text, size_t len, int timeout_ms, kevo_error *err);
int kevo_frame_read_text(int fd, char **text, size_t *len, size_t max_len, int timeout_ms,
                         kevo_error *err);

#endif
