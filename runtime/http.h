/* http.h: a batch of HTTP requests run concurrently on one thread (curl multi).
 *
 * A client owns one curl multi handle for its whole life, so connections (and TLS sessions)
 * are reused across batches. A batch runs at most `max_concurrent` transfers at once; each
 * request has its own connect, total and stall (low-speed) timeouts, an optional start delay
 * (for retry backoff decided by the caller) and a cap on its response body. Response headers
 * are captured raw. An API key is never handed over as a header value: the request names an
 * environment variable, read only when the transfer is set up, so it exists only in curl's
 * header list and is never copied into any error message. */
#ifndef KEVO_HTTP_H
#define KEVO_HTTP_H

#include <stddef.h>

#include "buf.h"
#include "status.h"

typedef struct kevo_http_client kevo_http_client;

typedef struct kevo_http_request {
  const char *method; /* "GET" or "POST" (others passed through as custom requests) */
  const char *url;
  const char *const *headers; /* "Name: value" lines, nheaders of them */
  size_t nheaders;
  const char *auth_env;    /* name of the variable holding the key, or NULL */
  const char *auth_header; /* "Authorization", "x-api-key" */
  const char *auth_prefix; /* "Bearer " or "" */
  const char *body;        /* NULL for none */
  size_t body_len;
  long connect_timeout_ms; /* 0: curl's default */
  long total_timeout_ms;   /* 0: none */
  long stall_timeout_ms;   /* no byte for this long aborts; rounded up to seconds; 0: none */
  long delay_ms;           /* start no earlier than this after the batch began */
  size_t max_body;         /* response body cap in bytes; 0: KEVO_BUF_DEFAULT_CAP */
} kevo_http_request;

typedef struct kevo_http_response {
  long status;      /* HTTP status, 0 when no response came */
  kevo_buf headers; /* raw header lines of the last response, "Name: value\r\n" each */
  kevo_buf body;
  int error;         /* KEVO_OK, KEVO_E_TIMEOUT, KEVO_E_HTTP (transport), KEVO_E_NOMEM (cap) */
  char errmsg[256];  /* why, when error is set */
  double ms;         /* wall time from start of the transfer to its end */
  long new_connects; /* connections opened for this transfer (0: an old one was reused) */
} kevo_http_response;

/* A new client running at most max_concurrent transfers at once (1..256). */
int kevo_http_client_new(kevo_http_client **out, int max_concurrent, kevo_error *err);
void kevo_http_client_free(kevo_http_client *c);

/* Runs n requests and fills resps[0..n) (which the caller initialises with
 * kevo_http_response_init and frees with kevo_http_response_free). Per-request failures
 * (timeouts, refused connections, body over cap) are recorded in each response, not returned:
 * the return is KEVO_OK unless the batch itself could not run (KEVO_E_NOMEM, KEVO_E_HTTP). */
int kevo_http_run(kevo_http_client *c, const kevo_http_request *reqs, kevo_http_response *resps,
                  size_t n, kevo_error *err);

/* Called once per request as soon as its response is complete (or has failed), in the order
 * they end, with the request's index; the response is final. A nonzero return abandons the
 * batch: transfers still in flight are dropped (their responses say so, and on_done is not
 * called for them) and kevo_http_run_each returns that status. */
typedef int (*kevo_http_done_fn)(void *ud, size_t index, kevo_http_response *resp);

/* kevo_http_run, calling on_done (when not NULL) as each request ends: the caller can store a
 * reply the moment it arrives, while the rest of the batch is still in flight. */
int kevo_http_run_each(kevo_http_client *c, const kevo_http_request *reqs,
                       kevo_http_response *resps, size_t n, kevo_http_done_fn on_done, void *ud,
                       kevo_error *err);

void kevo_http_response_init(kevo_http_response *r);
void kevo_http_response_free(kevo_http_response *r);

#endif
