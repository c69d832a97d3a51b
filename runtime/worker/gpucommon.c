/* gpucommon.c: the worker's ground floor, what every gpu*.c file uses and which uses none of them:
 * dtypes, the poison patterns, the clock, and the reply for a request that failed as a whole. */
#include "gpucommon.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

const uint64_t wk_poison_a[DK_COUNT] = {
    [DK_F32] = 0x7FC0A5A57FC0A5A5ull,   [DK_F16] = 0x7E5A7E5A7E5A7E5Aull,
    [DK_BF16] = 0x7FD57FD57FD57FD5ull,  [DK_F64] = 0x7FF8DEADA5A5A5A5ull,
    [DK_I32] = 0x5A5AA5A55A5AA5A5ull,   [DK_I64] = 0x5A5AA5A55A5AA5A5ull,
    [DK_U8] = 0xA5A5A5A5A5A5A5A5ull,    [DK_I8] = 0xA5A5A5A5A5A5A5A5ull,
    [DK_BOOL] = 0xA5A5A5A5A5A5A5A5ull,  [DK_F8E4M3] = 0x7F7F7F7F7F7F7F7Full,
    [DK_F8E5M2] = 0x7D7D7D7D7D7D7D7Dull};
const uint64_t wk_poison_b[DK_COUNT] = {
    [DK_F32] = 0x7FC05A5A7FC05A5Aull,   [DK_F16] = 0x7E6B7E6B7E6B7E6Bull,
    [DK_BF16] = 0x7FEA7FEA7FEA7FEAull,  [DK_F64] = 0x7FF8BEEF5A5A5A5Aull,
    [DK_I32] = 0xA5A55A5AA5A55A5Aull,   [DK_I64] = 0xA5A55A5AA5A55A5Aull,
    [DK_U8] = 0x5A5A5A5A5A5A5A5Aull,    [DK_I8] = 0x5A5A5A5A5A5A5A5Aull,
    [DK_BOOL] = 0x5A5A5A5A5A5A5A5Aull,  [DK_F8E4M3] = 0xFFFFFFFFFFFFFFFFull,
    [DK_F8E5M2] = 0x7E7E7E7E7E7E7E7Eull};

const uint64_t wk_pad_nan[DK_COUNT] = {
    [DK_F32] = 0x7FC7FFFF7FC7FFFFull,   [DK_F16] = 0x7E7F7E7F7E7F7E7Full,
    [DK_BF16] = 0x7FC77FC77FC77FC7ull,  [DK_F64] = 0x7FF8DEADDEADDEADull,
    [DK_I32] = 0x7F7F7F7F7F7F7F7Full,   [DK_I64] = 0x7F7F7F7F7F7F7F7Full,
    [DK_U8] = 0xFFFFFFFFFFFFFFFFull,    [DK_I8] = 0x7F7F7F7F7F7F7F7Full,
    [DK_BOOL] = 0xFFFFFFFFFFFFFFFFull,  [DK_F8E4M3] = 0x7F7F7F7F7F7F7F7Full,
    [DK_F8E5M2] = 0x7F7F7F7F7F7F7F7Full};

uint64_t wk_secret64(void) {
  uint64_t x = 0;
  if (getrandom(&x, sizeof x, 0) != (ssize_t)sizeof x) { /* not on Linux >= 3.17 */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    x = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec;
  }
  return x;
}

static const struct {
  const char *name;
  size_t size;
} dtypes[DK_COUNT] = {
    [DK_F32] = {"f32", 4},       [DK_F16] = {"f16", 2},      [DK_BF16] = {"bf16", 2},
    [DK_F64] = {"f64", 8},       [DK_I32] = {"i32", 4},      [DK_I64] = {"i64", 8},
    [DK_U8] = {"u8", 1},         [DK_I8] = {"i8", 1},        [DK_BOOL] = {"bool", 1},
    [DK_F8E4M3] = {"f8e4m3", 1}, [DK_F8E5M2] = {"f8e5m2", 1}};

int wk_dtype_is_int(int dt) {
  return dt == DK_I32 || dt == DK_I64 || dt == DK_U8 || dt == DK_I8 || dt == DK_BOOL;
}

size_t wk_dtype_size(int dt) {
  return dt >= 0 && dt < DK_COUNT ? dtypes[dt].size : 0;
}

const char *wk_dtype_name(int dt) {
  return dt >= 0 && dt < DK_COUNT ? dtypes[dt].name : "?";
}

int wk_dtype_parse(const char *s) {
  for (int i = 0; s && i < DK_COUNT; i++)
    if (!strcmp(s, dtypes[i].name)) return i;
  return -1;
}

double wk_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

cJSON *kevo_gpu_error_reply(const char *code, const char *msg) {
  cJSON *r = cJSON_CreateObject();
  char text[2300];
  snprintf(text, sizeof text, "%s: %s", code, msg);
  cJSON_AddBoolToObject(r, "ok", 0);
  cJSON_AddStringToObject(r, "error", text);
  return r;
}
