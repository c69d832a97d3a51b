/* status.h: the one status enum of kevo, its messages, and the error buffer every core
 * function fills. Core code returns a kevo_status and never prints or exits. */
#ifndef KEVO_STATUS_H
#define KEVO_STATUS_H

#include <stddef.h>

typedef enum kevo_status {
  KEVO_OK = 0,
  KEVO_E_NOMEM,       /* out of memory, or a bounded buffer hit its cap */
  KEVO_E_ARG,         /* misuse: a bad argument (bindings raise on this) */
  KEVO_E_IO,          /* file or pipe I/O failed */
  KEVO_E_PARSE,       /* malformed input: recipe, JSON, expression, message */
  KEVO_E_RECIPE,      /* a well-formed recipe that does not make sense */
  KEVO_E_DB,          /* the archive failed: corrupt, locked, wrong schema */
  KEVO_E_COMPILE,     /* a candidate did not compile */
  KEVO_E_LAUNCH,      /* a candidate could not be launched (bad config, too much shared memory) */
  KEVO_E_VERIFY,      /* a candidate gave wrong results */
  KEVO_E_CRASH,       /* a candidate crashed the GPU context (illegal address, trap) */
  KEVO_E_TIMEOUT,     /* a deadline passed (kernel, compile, HTTP) */
  KEVO_E_NOGPU,       /* the work needs a GPU and there is none */
  KEVO_E_CUDA,        /* a CUDA driver call failed outside any candidate's fault */
  KEVO_E_WORKER,      /* the evaluator worker died or spoke nonsense */
  KEVO_E_HTTP,        /* an HTTP request failed for good */
  KEVO_E_BUDGET,      /* a token, cost or time budget is spent */
  KEVO_E_SANDBOX,     /* a sandboxed script broke a rule or its budget */
  KEVO_E_UNSUPPORTED, /* the machine lacks something the work needs (Triton, python3, ...) */
  KEVO_E_INTERNAL,    /* a bug in kevo */
  KEVO_STATUS_COUNT
} kevo_status;

/* Human text for a status ("compile error"). Never NULL. */
const char *kevo_strerror(int status);
/* Stable code name for scripts and JSON ("E_COMPILE"; "OK" for KEVO_OK). Never NULL. */
const char *kevo_code(int status);

/* An error: a status and a message naming what went wrong, for a person to act on. */
typedef struct kevo_error {
  int status;
  char msg[2048];
} kevo_error;

/* Records status and a printf-style message in err (which may be NULL) and returns status,
 * so `return kevo_fail(err, KEVO_E_PARSE, "%s:%d:%d: ...", ...)` reads naturally. */
int kevo_fail(kevo_error *err, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefixes err->msg with a printf-style context ("loading x.yaml: ") and returns err->status. */
int kevo_fail_prefix(kevo_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kevo_error_clear(kevo_error *err);

#endif
