#include "http.h"

#include <curl/curl.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { HEADERS_CAP = 64 << 10, AUTH_LINE_MAX = 8192, MAX_CONCURRENT = 256 };

struct kevo_http_client {
  CURLM *multi; /* owns the connection cache that makes reuse across batches work */
  int max_concurrent;
};

/* One transfer in flight. */
typedef struct transfer {
  CURL *easy;
  struct curl_slist *headers;
  struct curl_slist *auth; /* the node holding the key, wiped before it is freed */
  kevo_http_response *resp;
  size_t index;
  double started_ms;
  double last_byte_ms; /* when a byte last arrived (or the transfer started), for stalls */
  long stall_ms;
  int overflow; /* the body went past its cap */
  char errbuf[CURL_ERROR_SIZE];
} transfer;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init_once(void) {
  curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

void kevo_http_response_init(kevo_http_response *r) {
  memset(r, 0, sizeof *r);
  kevo_buf_init(&r->headers, HEADERS_CAP);
  kevo_buf_init(&r->body, 0);
}

void kevo_http_response_free(kevo_http_response *r) {
  kevo_buf_free(&r->headers);
  kevo_buf_free(&r->body);
}

int kevo_http_client_new(kevo_http_client **out, int max_concurrent, kevo_error *err) {
  *out = NULL;
  if (max_concurrent < 1 || max_concurrent > MAX_CONCURRENT)
    return kevo_fail(err, KEVO_E_ARG, "concurrency must be 1..%d, got %d", MAX_CONCURRENT,
                     max_concurrent);
  pthread_once(&curl_once, curl_init_once);
  if (curl_init_rc != CURLE_OK)
    return kevo_fail(err, KEVO_E_HTTP, "curl_global_init: %s", curl_easy_strerror(curl_init_rc));
  kevo_http_client *c = calloc(1, sizeof *c);
  if (!c) return kevo_fail(err, KEVO_E_NOMEM, "cannot allocate an HTTP client");
  c->multi = curl_multi_init();
  if (!c->multi) {
    free(c);
    return kevo_fail(err, KEVO_E_NOMEM, "curl_multi_init failed");
  }
  c->max_concurrent = max_concurrent;
  curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, (long)max_concurrent);
  *out = c;
  return KEVO_OK;
}

void kevo_http_client_free(kevo_http_client *c) {
  if (!c) return;
  curl_multi_cleanup(c->multi);
  free(c);
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud) {
  transfer *t = ud;
  size_t n = size * nmemb;
  t->last_byte_ms = now_ms();
  if (kevo_buf_append(&t->resp->body, p, n)) {
    t->overflow = 1;
    return 0; /* curl aborts the transfer with CURLE_WRITE_ERROR */
  }
  return n;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud) {
  transfer *t = ud;
  size_t n = size * nmemb;
  t->last_byte_ms = now_ms();
  /* A new status line starts a new response (after a 100 Continue or a redirect): keep only
   * the last response's headers. */
  if (n >= 5 && memcmp(p, "HTTP/", 5) == 0) kevo_buf_reset(&t->resp->headers);
  if (kevo_buf_append(&t->resp->headers, p, n)) return 0;
  return n;
}

/* Appends "header: prefix KEY" read from the environment now; the temporary copy is wiped.
 * A missing or empty variable adds nothing (local servers need no key; remote ones answer
 * 401, which the caller explains). */
static int add_auth(transfer *t, const kevo_http_request *rq) {
  if (!rq->auth_env || !rq->auth_header) return KEVO_OK;
  const char *key = getenv(rq->auth_env);
  if (!key || !*key) return KEVO_OK;
  char line[AUTH_LINE_MAX];
  int len = snprintf(line, sizeof line, "%s: %s%s", rq->auth_header,
                     rq->auth_prefix ? rq->auth_prefix : "", key);
  int rc = KEVO_OK;
  if (len < 0 || (size_t)len >= sizeof line) {
    rc = KEVO_E_ARG;
  } else {
    struct curl_slist *s = curl_slist_append(t->headers, line);
    if (!s) {
      rc = KEVO_E_NOMEM;
    } else {
      t->headers = s;
      for (t->auth = s; t->auth->next; t->auth = t->auth->next) {
      }
    }
  }
  memset(line, 0, sizeof line);
  __asm__ __volatile__("" : : "r"(line) : "memory"); /* keep the wipe */
  return rc;
}

static void transfer_free(transfer *t) {
  if (!t) return;
  if (t->easy) curl_easy_cleanup(t->easy);
  if (t->auth && t->auth->data) {
    volatile char *p = t->auth->data;
    while (*p)
      *p++ = 0;
  }
  curl_slist_free_all(t->headers);
  free(t);
}

static void fail_response(kevo_http_response *r, int status, const char *msg) {
  r->error = status;
  snprintf(r->errmsg, sizeof r->errmsg, "%s", msg);
}

/* Sets up and adds one transfer; on failure records the error in its response. */
static transfer *transfer_start(kevo_http_client *c, const kevo_http_request *rq,
                                kevo_http_response *resp, size_t index) {
  transfer *t = calloc(1, sizeof *t);
  if (!t) {
    fail_response(resp, KEVO_E_NOMEM, "cannot allocate a transfer");
    return NULL;
  }
  t->resp = resp;
  t->index = index;
  t->easy = curl_easy_init();
  if (!t->easy) goto nomem;
  if (rq->max_body) resp->body.cap = rq->max_body;
  for (size_t i = 0; i < rq->nheaders; i++) {
    struct curl_slist *s = curl_slist_append(t->headers, rq->headers[i]);
    if (!s) goto nomem;
    t->headers = s;
  }
  struct curl_slist *s = curl_slist_append(t->headers, "Expect:"); /* no 100-continue stall */
  if (!s) goto nomem;
  t->headers = s;
  int rc = add_auth(t, rq);
  if (rc == KEVO_E_ARG) {
    fail_response(resp, KEVO_E_ARG, "the API key variable's value is too long");
    transfer_free(t);
    return NULL;
  }
  if (rc) goto nomem;

  CURL *e = t->easy;
  curl_easy_setopt(e, CURLOPT_URL, rq->url);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->errbuf);
  curl_easy_setopt(e, CURLOPT_PRIVATE, t);
  if (rq->connect_timeout_ms > 0)
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, rq->connect_timeout_ms);
  if (rq->total_timeout_ms > 0) curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, rq->total_timeout_ms);
  t->stall_ms = rq->stall_timeout_ms; /* watched by kevo_http_run: curl's low-speed check
                                        averages over seconds and counts the upload */
  const char *method = rq->method ? rq->method : "GET";
  if (strcmp(method, "POST") == 0 || rq->body) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
  }
  if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0)
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
  t->started_ms = t->last_byte_ms = now_ms();
  if (curl_multi_add_handle(c->multi, e) != CURLM_OK) goto nomem;
  return t;
nomem:
  fail_response(resp, KEVO_E_NOMEM, "cannot set up the transfer");
  transfer_free(t);
  return NULL;
}

static void transfer_finish(kevo_http_client *c, transfer *t, CURLcode result) {
  kevo_http_response *r = t->resp;
  r->ms = now_ms() - t->started_ms;
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &r->status);
  curl_easy_getinfo(t->easy, CURLINFO_NUM_CONNECTS, &r->new_connects);
  if (result != CURLE_OK) {
    const char *why = t->errbuf[0] ? t->errbuf : curl_easy_strerror(result);
    if (t->overflow) {
      r->error = KEVO_E_NOMEM;
      snprintf(r->errmsg, sizeof r->errmsg, "response body over its cap of %zu bytes", r->body.cap);
    } else if (result == CURLE_OPERATION_TIMEDOUT) {
      r->error = KEVO_E_TIMEOUT;
      snprintf(r->errmsg, sizeof r->errmsg, "timed out after %.0f ms: %s", r->ms, why);
    } else {
      r->error = KEVO_E_HTTP;
      snprintf(r->errmsg, sizeof r->errmsg, "%s", why);
    }
  }
  curl_multi_remove_handle(c->multi, t->easy);
  transfer_free(t);
}

typedef struct pending {
  size_t index;
  long delay_ms;
} pending;

static int by_delay(const void *a, const void *b) {
  const pending *x = a, *y = b;
  if (x->delay_ms != y->delay_ms) return x->delay_ms < y->delay_ms ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

int kevo_http_run(kevo_http_client *c, const kevo_http_request *reqs, kevo_http_response *resps,
                  size_t n, kevo_error *err) {
  return kevo_http_run_each(c, reqs, resps, n, NULL, NULL, err);
}

/* Hands a finished response to the caller; a nonzero status from it stops the batch. */
static int deliver(kevo_http_done_fn on_done, void *ud, size_t i, kevo_http_response *r,
                   kevo_error *err) {
  if (!on_done) return KEVO_OK;
  int rc = on_done(ud, i, r);
  if (rc) return kevo_fail(err, rc, "the batch was stopped after request %zu ended", i + 1);
  return KEVO_OK;
}

int kevo_http_run_each(kevo_http_client *c, const kevo_http_request *reqs,
                       kevo_http_response *resps, size_t n, kevo_http_done_fn on_done, void *ud,
                       kevo_error *err) {
  if (n == 0) return KEVO_OK;
  pending *order = calloc(n, sizeof *order);
  transfer **live = calloc(n, sizeof *live); /* by request index, while in flight */
  if (!order || !live) {
    free(order);
    free(live);
    return kevo_fail(err, KEVO_E_NOMEM, "cannot allocate %zu requests", n);
  }
  for (size_t i = 0; i < n; i++)
    order[i] = (pending){i, reqs[i].delay_ms > 0 ? reqs[i].delay_ms : 0};
  qsort(order, n, sizeof *order, by_delay);

  int rc = KEVO_OK;
  size_t next = 0, done = 0;
  int running = 0;
  double t0 = now_ms();
  while (done < n && !rc) {
    double elapsed = now_ms() - t0;
    while (!rc && next < n && running < c->max_concurrent && order[next].delay_ms <= elapsed) {
      size_t i = order[next++].index;
      live[i] = transfer_start(c, &reqs[i], &resps[i], i);
      if (live[i]) {
        running++;
      } else {
        done++;
        rc = deliver(on_done, ud, i, &resps[i], err);
      }
    }
    if (rc) break;
    int still;
    CURLMcode mc = curl_multi_perform(c->multi, &still);
    if (mc != CURLM_OK) {
      rc = kevo_fail(err, KEVO_E_HTTP, "curl_multi_perform: %s", curl_multi_strerror(mc));
      break;
    }
    CURLMsg *msg;
    int left;
    while (!rc && (msg = curl_multi_info_read(c->multi, &left))) {
      if (msg->msg != CURLMSG_DONE) continue;
      transfer *t;
      CURLcode result = msg->data.result;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
      size_t i = t->index;
      live[i] = NULL;
      transfer_finish(c, t, result);
      running--;
      done++;
      rc = deliver(on_done, ud, i, &resps[i], err);
    }
    if (rc || done >= n) break;
    int wait = 1000;
    /* Stalls: a transfer with no byte for its stall time is aborted as a timeout. */
    double now = now_ms();
    for (size_t i = 0; i < n && !rc; i++) {
      transfer *t = live[i];
      if (!t || t->stall_ms <= 0) continue;
      double idle = now - t->last_byte_ms;
      if (idle >= t->stall_ms) {
        live[i] = NULL;
        transfer_finish(c, t, CURLE_OK);
        t = NULL;
        kevo_http_response *r = &resps[i];
        r->error = KEVO_E_TIMEOUT;
        snprintf(r->errmsg, sizeof r->errmsg, "stalled: no byte for %.0f ms (stall timeout)", idle);
        running--;
        done++;
        rc = deliver(on_done, ud, i, r, err);
      } else if (t->stall_ms - idle < wait) {
        wait = (int)(t->stall_ms - idle) + 1;
      }
    }
    if (rc || done >= n) break;
    if (next < n && running < c->max_concurrent) {
      double until = order[next].delay_ms - (now_ms() - t0);
      if (until < wait) wait = until < 0 ? 0 : (int)until + 1;
    }
    mc = curl_multi_poll(c->multi, NULL, 0, wait, NULL);
    if (mc != CURLM_OK) {
      rc = kevo_fail(err, KEVO_E_HTTP, "curl_multi_poll: %s", curl_multi_strerror(mc));
      break;
    }
  }
  if (rc) { /* the batch broke or the caller stopped it: abandon what is still in flight */
    for (size_t i = 0; i < n; i++) {
      if (!live[i]) continue;
      fail_response(live[i]->resp, KEVO_E_HTTP, "the batch was abandoned");
      curl_multi_remove_handle(c->multi, live[i]->easy);
      transfer_free(live[i]);
    }
    for (; next < n; next++) /* and what never started */
      fail_response(&resps[order[next].index], KEVO_E_HTTP, "the batch was abandoned");
  }
  free(order);
  free(live);
  return rc;
}
