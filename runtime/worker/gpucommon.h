/* gpucommon.h: the worker's ground floor (gpucommon.c): dtypes, poison patterns, the clock, and the
 * reply for a request that failed as a whole. Every gpu*.c file may use it; it uses none of them.
 */
#ifndef KEVO_GPUCOMMON_H
#define KEVO_GPUCOMMON_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "devkernels.h"

/* One device's state: opened by gpudevice.c, its fields in gpueval_int.h. */
typedef struct kevo_gpu kevo_gpu;

/* Poison patterns, replicated over 8 bytes; per element size the low bytes are taken, so every
 * float type reads them as a quiet NaN with a payload of its own, integers as a sentinel. */
extern const uint64_t wk_poison_a[DK_COUNT], wk_poison_b[DK_COUNT];
/* What fills the slack after an input's last element: a NaN for float types (so a kernel that
 * reads past the end gets NaN, not a harmless zero), a large sentinel for integers. */
extern const uint64_t wk_pad_nan[DK_COUNT];
/* 64 secret bits from getrandom. */
uint64_t wk_secret64(void);

int wk_dtype_parse(const char *name); /* DK_*, or -1 when unknown */
size_t wk_dtype_size(int dt);
const char *wk_dtype_name(int dt);
int wk_dtype_is_int(int dt); /* i32 i64 u8 i8 bool: compared exactly */

double wk_now_ms(void); /* monotonic */

/* A reply that failed as a whole: {"ok": false, "error": "CODE: message"}. */
cJSON *kevo_gpu_error_reply(const char *code, const char *msg);

#endif
