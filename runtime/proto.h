/* proto.h: the driver <-> evaluator worker wire format.
 *
 * A frame is: u32 little-endian length of a JSON header, the header (UTF-8 JSON object), then
 * the blobs it announces in "blobs": [len, ...], back to back. Plain data only: nothing in a
 * frame is executed on decode. The same frames can later travel over a queue between hosts. */
#ifndef KEVO_PROTO_H
#define KEVO_PROTO_H

#include <stddef.h>
#include <string.h>
#include <sys/types.h>

#include "status.h"

typedef struct cJSON cJSON;

enum {
  KEVO_PROTO_MAX_HEADER = 16 << 20, /* bytes of JSON in one frame */
  KEVO_PROTO_MAX_BLOBS = 64,        /* blobs in one frame */
  /* tensors (inputs and outputs) of one evaluate request: the worker refuses more, and the
   * driver refuses a recipe with more before it asks (a KernelBench level-3 model passes its
   * parameters and buffers as inputs: MobileNetV2 has 316 tensors, DenseNet201 over 1000) */
  KEVO_PROTO_MAX_TENSORS = 4096,
  /* launches in one plan, arguments of one launch and the bytes of kernel parameters they
   * take (each aligned to its size: a pointer 8, i32 4): the launch chunk's resolver
   * (launch.c) and the worker (gpuplan.c) hold plans to the same limits. 32764 bytes is what
   * CUDA 12.1 and later allow on Volta and later GPUs (4 KiB before; the worker says so): a
   * KernelBench model passes every parameter and buffer, ResNet101 and DenseNet201 600 or more
   * pointers (4096 tensors of 8 bytes would not fit: the byte count is the limit that bites). */
  KEVO_PROTO_MAX_KERNELS = 64,
  KEVO_PROTO_MAX_ARGS = KEVO_PROTO_MAX_TENSORS,
  KEVO_PROTO_MAX_PARAM_BYTES = 32764,
};
#define KEVO_PROTO_MAX_BLOB ((size_t)1 << 30) /* bytes in one blob */

/* The kernel-parameter bytes after one more argument of `kind` ("buf", "i32", "u32", "f32",
 * "i64", ...): each argument aligned to its own size, as the compiler lays parameters out
 * (a 32-bit scalar 4 bytes, a pointer or a 64-bit scalar 8). The launch chunk's resolver and
 * the worker count with it against KEVO_PROTO_MAX_PARAM_BYTES. */
static inline size_t kevo_proto_param_add(size_t bytes, const char *kind) {
  size_t size = !strcmp(kind, "i32") || !strcmp(kind, "u32") || !strcmp(kind, "f32") ? 4 : 8;
  return (bytes + size - 1) / size * size + size;
}

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

/* The strategy link's reader, for a non-blocking fd: each side reads whatever the pipe holds in
 * one read and takes whole frames out of it (the writer sends a frame in one writev, so the
 * reader wakes once per message). When the pipe is empty it may first poll it with non-blocking
 * reads for up to KEVO_LINK_SPIN_US before it sleeps in poll: on an idle virtual machine a
 * process blocked in a read takes 15 us and more to wake (a pipe ping-pong: 29-35 us a round
 * trip blocking, 1.1 us spinning), twice per ctx call. A spin only helps while a CPU would
 * otherwise sit idle, so it is off unless `allowed` (the host sets it, and tells the strategy
 * process, from the machine's runnable threads: stratproc.c); on a machine with no CPU to spare
 * (load 20 on 2 CPUs) spinning made calls 2-3 times slower, and a sched_yield between polls up
 * to 10 times. A spin that finds nothing within its time makes the next waits sleep at once
 * (2, 4, ... 64 of them), so a slow peer costs one spin in many. Measured on the 2-CPU build
 * machine (bench/ctx_roundtrip.sh): at load 2.7 kevo spun in 85% of its waits, 99.9% of its
 * spins got the message, and budget_left took 29.6 us against 86.4 us with no spin; at load
 * 9-12 it spun in none of 19544 waits (and calls cost what they cost with no spin). */
enum { KEVO_LINK_SPIN_US = 100, KEVO_LINK_SPIN_BACKOFF_MAX = 64 };
typedef struct kevo_link_spin {
  int misses, skip;
  int allowed;                  /* 0 (the start): sleep at once */
  long long waits, spins, hits; /* counts: waits that found the pipe empty, spun, spun and got it */
} kevo_link_spin;
/* When to stop spinning in the wait that starts now (ns, CLOCK_MONOTONIC); 0: do not spin. */
long long kevo_link_spin_until(kevo_link_spin *s);
/* How the wait's spin ended: hit (the message came within the spin's time) or not (it slept). */
void kevo_link_spun(kevo_link_spin *s, int hit);
typedef struct kevo_link_buf {
  char *buf;
  size_t len, cap;
} kevo_link_buf;
/* KEVO_OK with *text set: a whole frame taken out of b (*text malloc'd, NUL-terminated; *len
 * its length); KEVO_OK with *text NULL: b holds none yet; KEVO_E_PARSE for a length over
 * max_len or the cap, KEVO_E_NOMEM. */
int kevo_link_take(kevo_link_buf *b, size_t max_len, char **text, size_t *len, kevo_error *err);
/* Reads what fd holds into b: > 0 bytes read, 0 EOF, -1 nothing now (EAGAIN), -2 an error
 * (errno). */
ssize_t kevo_link_fill(kevo_link_buf *b, int fd);
long long kevo_link_now_ns(void); /* CLOCK_MONOTONIC */
void kevo_link_free(kevo_link_buf *b);

#endif
