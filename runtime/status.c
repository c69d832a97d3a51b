#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct {
  const char *code;
  const char *text;
} status_table[KEVO_STATUS_COUNT] = {
    [KEVO_OK] = {"OK", "success"},
    [KEVO_E_NOMEM] = {"E_NOMEM", "out of memory or over a size cap"},
    [KEVO_E_ARG] = {"E_ARG", "bad argument"},
    [KEVO_E_IO] = {"E_IO", "input/output error"},
    [KEVO_E_PARSE] = {"E_PARSE", "malformed input"},
    [KEVO_E_RECIPE] = {"E_RECIPE", "invalid recipe"},
    [KEVO_E_DB] = {"E_DB", "archive error"},
    [KEVO_E_COMPILE] = {"E_COMPILE", "compile error"},
    [KEVO_E_LAUNCH] = {"E_LAUNCH", "launch error"},
    [KEVO_E_VERIFY] = {"E_VERIFY", "wrong result"},
    [KEVO_E_CRASH] = {"E_CRASH", "kernel crashed"},
    [KEVO_E_TIMEOUT] = {"E_TIMEOUT", "deadline passed"},
    [KEVO_E_NOGPU] = {"E_NOGPU", "no GPU on this machine"},
    [KEVO_E_CUDA] = {"E_CUDA", "CUDA error"},
    [KEVO_E_WORKER] = {"E_WORKER", "evaluator worker failed"},
    [KEVO_E_HTTP] = {"E_HTTP", "HTTP request failed"},
    [KEVO_E_BUDGET] = {"E_BUDGET", "budget spent"},
    [KEVO_E_SANDBOX] = {"E_SANDBOX", "sandbox violation"},
    [KEVO_E_UNSUPPORTED] = {"E_UNSUPPORTED", "not supported on this machine"},
    [KEVO_E_INTERNAL] = {"E_INTERNAL", "internal error"},
};

const char *kevo_strerror(int status) {
  if (status < 0 || status >= KEVO_STATUS_COUNT || !status_table[status].text)
    return "unknown error";
  return status_table[status].text;
}

const char *kevo_code(int status) {
  if (status < 0 || status >= KEVO_STATUS_COUNT || !status_table[status].code) return "E_UNKNOWN";
  return status_table[status].code;
}

int kevo_fail(kevo_error *err, int status, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    err->status = status;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
  }
  return status;
}

int kevo_fail_prefix(kevo_error *err, const char *fmt, ...) {
  if (!err) return KEVO_E_INTERNAL;
  char prefix[512], old[sizeof err->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, err->msg, sizeof old);
  snprintf(err->msg, sizeof err->msg, "%s%s", prefix, old);
  return err->status;
}

void kevo_error_clear(kevo_error *err) {
  if (!err) return;
  err->status = KEVO_OK;
  err->msg[0] = '\0';
}
