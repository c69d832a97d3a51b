/* gpuprofile.h: the worker's profile stage (docs/profile.md): hardware metrics of a batch of
 * plans (candidates and the reference) from one ncu run over a replay child, never inside a
 * timed measurement. Knows nothing of Lua; never prints. */
#ifndef KEVO_GPUPROFILE_H
#define KEVO_GPUPROFILE_H

#include <stddef.h>
#include <sys/types.h>

#include "proto.h"

/* The `profile` op: writes the request into a private folder, runs ncu (the fixed metric set,
 * clocks left alone) on `kevo worker --profile-replay DIR --device ordinal`, waits at most the
 * request's deadline_ms, and replies {"ok": true, "tool": "ncu", "ms": wall, "plans": [{"label",
 * "kernels": [{"name", "metrics": {...}}], "error"?}]} or {"ok": false, "error": "E_X: why",
 * "reason": "no_tool"|"no_gpu"|"permission"|"unsupported"|"timeout"|"no_kernels"|"failed"}. Needs
 * no device of its own: the child opens one. Never NULL. */
cJSON *kevo_gpu_profile(int ordinal, const cJSON *req, const kevo_blob *blobs, size_t nblobs);

/* The `profile_standby` op (docs/profile.md "Cost"): starts ncu over a replay child that opens
 * device `ordinal` and waits; the next profile request of that device is handed to it, so ncu's
 * start-up and the child's CUDA set-up are not waited for. From then on each profile request
 * starts the next standby once it has replied. Replies {"ok": true} or {"ok": false, "error",
 * "reason": "no_tool"}. kevo_gpu_profile_standby_stop kills a waiting one (the worker's exit). */
cJSON *kevo_gpu_profile_standby(int ordinal);
void kevo_gpu_profile_standby_stop(void);

/* Waits (at most max_ms) until a standby that is starting has set up its CUDA context (its
 * child writes DIR/ready) or is gone: called before a timing loop, so no timed measurement runs
 * while another process initialises the GPU. Returns at once when there is none or it is set up
 * already. A standby that is set up is idle: an open context with no work. */
void kevo_gpu_profile_standby_settle(double max_ms);

/* The replay child, run under ncu: opens device `ordinal`; with standby_for (the worker's pid)
 * > 0 waits for the worker's go (a byte on the FIFO DIR/go; it gives up, writing nothing, when
 * that worker is gone or after 15 minutes); reads DIR/request, draws the inputs of the
 * request's shape once, runs each plan of profile.plans once, in order, and writes
 * DIR/manifest ({"plans": [{"kernels": n, "error"?}]}, what ncu's kernel numbering is matched
 * against). Returns a process exit status. */
int kevo_gpu_profile_replay(const char *dir, int ordinal, pid_t standby_for);

#endif
