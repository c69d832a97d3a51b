#include "proto.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

const kevo_verdict kevo_verdicts[] = {
    {"ok", "verified on every shape and trial (and timed, when asked)"},
    {"compile_error", "the candidate did not compile"},
    {"launch_error", "its launch chunk or a kernel launch failed"},
    {"wrong", "an output differs from the reference's beyond the tolerance"},
    {"crash", "a kernel took the CUDA context down (illegal address, trap)"},
    {"timeout", "the worker did not answer by the deadline"},
    {"implausible", "timed faster than the physical floor"},
    {"unwritten", "an output element was left as the poison"},
    {"nondeterministic", "two runs on the same inputs differ"},
    {"input_modified", "the kernel wrote to an input"},
    {"no_gpu", "judging it needs a GPU and there is none"},
    {"not_evaluated", "not started: the run's --time ran out first (not an evaluation)"},
    {"error", "the evaluation itself failed (worker, reference, request)"},
    {NULL, NULL}};
#include <unistd.h>

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Writes the iovs' bytes by `deadline` (ms on the monotonic clock; < 0 none), in one writev
 * where the fd takes them whole. SIGPIPE is blocked meanwhile and a SIGPIPE this write raised
 * is consumed, so a dead reader is an error here, not the end of the process. */
static int write_iov(int fd, struct iovec *iov, int niov, long long deadline, kevo_error *err) {
  sigset_t pipe_set, old, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  /* a SIGPIPE pending before this write can only be one the caller kept blocked */
  int was_pending = 0;
  if (sigismember(&old, SIGPIPE)) {
    sigpending(&pending);
    was_pending = sigismember(&pending, SIGPIPE);
  }
  int rc = KEVO_OK, epipe = 0, at = 0;
  while (at < niov && iov[at].iov_len == 0)
    at++;
  while (at < niov) {
    ssize_t w = writev(fd, iov + at, niov - at);
    if (w > 0) {
      size_t done = (size_t)w;
      while (at < niov && done >= iov[at].iov_len)
        done -= iov[at++].iov_len;
      if (at < niov) {
        iov[at].iov_base = (char *)iov[at].iov_base + done;
        iov[at].iov_len -= done;
      }
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) {
      long long left = deadline < 0 ? 1000 : deadline - now_ms();
      if (left <= 0) {
        rc = kevo_fail(err, KEVO_E_TIMEOUT, "the reader did not take the frame in time");
        break;
      }
      struct pollfd pfd = {.fd = fd, .events = POLLOUT};
      poll(&pfd, 1, left > 1000 ? 1000 : (int)left);
      continue;
    }
    epipe = errno == EPIPE;
    rc = kevo_fail(err, KEVO_E_IO, "writing a frame: %s",
                   epipe ? "the reader closed the pipe" : strerror(errno));
    break;
  }
  if (epipe && !was_pending) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, NULL, &zero) > 0) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

static int write_all(int fd, const void *p, size_t n, long long deadline, kevo_error *err) {
  struct iovec iov = {(void *)p, n};
  return write_iov(fd, &iov, 1, deadline, err);
}

int kevo_frame_write(int fd, cJSON *header, const kevo_blob *blobs, size_t nblobs,
                     kevo_error *err) {
  return kevo_frame_send(fd, header, blobs, nblobs, -1, err);
}

int kevo_frame_send(int fd, cJSON *header, const kevo_blob *blobs, size_t nblobs, int timeout_ms,
                    kevo_error *err) {
  long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;

  if (nblobs > KEVO_PROTO_MAX_BLOBS)
    return kevo_fail(err, KEVO_E_ARG, "a frame carries at most %d blobs", KEVO_PROTO_MAX_BLOBS);
  cJSON_DeleteItemFromObject(header, "blobs");
  cJSON *sizes = cJSON_AddArrayToObject(header, "blobs");
  for (size_t i = 0; i < nblobs; i++)
    cJSON_AddItemToArray(sizes, cJSON_CreateNumber((double)blobs[i].size));
  char *text = cJSON_PrintUnformatted(header);
  if (!text) return kevo_fail(err, KEVO_E_NOMEM, "cannot encode a frame header");
  size_t len = strlen(text);
  int rc = KEVO_OK;
  if (len > KEVO_PROTO_MAX_HEADER) {
    rc = kevo_fail(err, KEVO_E_NOMEM, "frame header of %zu bytes is over the cap", len);
    goto out;
  }
  unsigned char pre[4] = {(unsigned char)len, (unsigned char)(len >> 8), (unsigned char)(len >> 16),
                          (unsigned char)(len >> 24)};
  rc = write_all(fd, pre, 4, deadline, err);
  if (!rc) rc = write_all(fd, text, len, deadline, err);
  for (size_t i = 0; !rc && i < nblobs; i++)
    rc = write_all(fd, blobs[i].data, blobs[i].size, deadline, err);
out:
  free(text);
  return rc;
}

/* Reads exactly n bytes by `deadline` (ms on the monotonic clock; < 0 means none). */
static int read_all(int fd, void *p, size_t n, long long deadline, kevo_error *err) {
  char *c = p;
  while (n > 0) {
    if (deadline >= 0) {
      long long left = deadline - now_ms();
      if (left <= 0) return kevo_fail(err, KEVO_E_TIMEOUT, "no complete reply in time");
      struct pollfd pfd = {.fd = fd, .events = POLLIN};
      int pr = poll(&pfd, 1, left > 1000000 ? 1000000 : (int)left);
      if (pr < 0 && errno != EINTR) return kevo_fail(err, KEVO_E_IO, "poll: %s", strerror(errno));
      if (pr <= 0) continue;
    }
    ssize_t r = read(fd, c, n);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return kevo_fail(err, KEVO_E_IO, "reading a frame: %s", strerror(errno));
    }
    if (r == 0) return kevo_fail(err, KEVO_E_IO, "the peer closed the pipe");
    c += r;
    n -= (size_t)r;
  }
  return KEVO_OK;
}

void kevo_frame_free(kevo_frame *f) {
  if (!f) return;
  cJSON_Delete(f->header);
  f->header = NULL;
  for (size_t i = 0; i < f->nblobs; i++)
    free(f->blobs[i].data);
  f->nblobs = 0;
}

int kevo_frame_read(int fd, kevo_frame *out, int timeout_ms, kevo_error *err) {
  memset(out, 0, sizeof *out);
  long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
  unsigned char pre[4];
  int rc = read_all(fd, pre, 4, deadline, err);
  if (rc) return rc;
  uint32_t len = pre[0] | (uint32_t)pre[1] << 8 | (uint32_t)pre[2] << 16 | (uint32_t)pre[3] << 24;
  if (len == 0 || len > KEVO_PROTO_MAX_HEADER)
    return kevo_fail(err, KEVO_E_PARSE, "frame header length %u is out of range", len);
  char *text = malloc(len + 1);
  if (!text) return kevo_fail(err, KEVO_E_NOMEM, "no memory for a %u-byte frame", len);
  rc = read_all(fd, text, len, deadline, err);
  if (rc) goto fail;
  text[len] = '\0';
  out->header = cJSON_ParseWithLength(text, len);
  if (!cJSON_IsObject(out->header)) {
    rc = kevo_fail(err, KEVO_E_PARSE, "frame header is not a JSON object");
    goto fail;
  }
  cJSON *sizes = cJSON_GetObjectItemCaseSensitive(out->header, "blobs");
  int n = cJSON_IsArray(sizes) ? cJSON_GetArraySize(sizes) : 0;
  if (n > KEVO_PROTO_MAX_BLOBS) {
    rc = kevo_fail(err, KEVO_E_PARSE, "frame announces %d blobs", n);
    goto fail;
  }
  for (int i = 0; i < n; i++) {
    cJSON *s = cJSON_GetArrayItem(sizes, i);
    if (!cJSON_IsNumber(s) || s->valuedouble < 0 || s->valuedouble > (double)KEVO_PROTO_MAX_BLOB) {
      rc = kevo_fail(err, KEVO_E_PARSE, "frame blob %d has a bad size", i);
      goto fail;
    }
    size_t sz = (size_t)s->valuedouble;
    void *p = malloc(sz ? sz : 1);
    if (!p) {
      rc = kevo_fail(err, KEVO_E_NOMEM, "no memory for a %zu-byte blob", sz);
      goto fail;
    }
    out->blobs[out->nblobs].data = p;
    out->blobs[out->nblobs].size = sz;
    out->nblobs++;
    rc = read_all(fd, p, sz, deadline, err);
    if (rc) goto fail;
  }
  free(text);
  return KEVO_OK;
fail:
  free(text);
  kevo_frame_free(out);
  return rc;
}

int kevo_frame_send_text(int fd, const char *text, size_t len, int timeout_ms, kevo_error *err) {
  long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
  if (len == 0 || len > KEVO_PROTO_MAX_HEADER)
    return kevo_fail(err, KEVO_E_NOMEM, "frame header of %zu bytes is out of range", len);
  unsigned char pre[4] = {(unsigned char)len, (unsigned char)(len >> 8), (unsigned char)(len >> 16),
                          (unsigned char)(len >> 24)};
  /* one writev: a reader sleeping on the pipe wakes once, to the whole frame */
  struct iovec iov[2] = {{pre, 4}, {(void *)text, len}};
  return write_iov(fd, iov, 2, deadline, err);
}

int kevo_frame_read_text(int fd, char **text, size_t *len, size_t max_len, int timeout_ms,
                         kevo_error *err) {
  *text = NULL;
  *len = 0;
  long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
  unsigned char pre[4];
  int rc = read_all(fd, pre, 4, deadline, err);
  if (rc) return rc;
  uint32_t n = pre[0] | (uint32_t)pre[1] << 8 | (uint32_t)pre[2] << 16 | (uint32_t)pre[3] << 24;
  if (n == 0 || n > KEVO_PROTO_MAX_HEADER || n > max_len)
    return kevo_fail(err, KEVO_E_PARSE, "frame header length %u is out of range", n);
  char *t = malloc((size_t)n + 1);
  if (!t) return kevo_fail(err, KEVO_E_NOMEM, "no memory for a %u-byte frame", n);
  rc = read_all(fd, t, n, deadline, err);
  if (rc) {
    free(t);
    return rc;
  }
  t[n] = '\0';
  *text = t;
  *len = n;
  return KEVO_OK;
}

/* The strategy link's reader (proto.h): whole frames out of what was read. */
int kevo_link_take(kevo_link_buf *b, size_t max_len, char **text, size_t *len, kevo_error *err) {
  *text = NULL;
  *len = 0;
  if (b->len < 4) return KEVO_OK;
  const unsigned char *u = (const unsigned char *)b->buf;
  uint32_t n = u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
  if (n == 0 || n > KEVO_PROTO_MAX_HEADER || n > max_len)
    return kevo_fail(err, KEVO_E_PARSE, "frame header length %u is out of range", n);
  if (b->len < 4 + (size_t)n) {
    if (b->cap < 4 + (size_t)n) { /* room for the whole frame: the next read can finish it */
      char *nb = realloc(b->buf, 4 + (size_t)n);
      if (!nb) return kevo_fail(err, KEVO_E_NOMEM, "no memory for a %u-byte frame", n);
      b->buf = nb;
      b->cap = 4 + (size_t)n;
    }
    return KEVO_OK;
  }
  char *t = malloc((size_t)n + 1);
  if (!t) return kevo_fail(err, KEVO_E_NOMEM, "no memory for a %u-byte frame", n);
  memcpy(t, b->buf + 4, n);
  t[n] = '\0';
  b->len -= 4 + (size_t)n;
  memmove(b->buf, b->buf + 4 + n, b->len);
  *text = t;
  *len = n;
  return KEVO_OK;
}

ssize_t kevo_link_fill(kevo_link_buf *b, int fd) {
  if (b->cap - b->len < 4096) {
    size_t cap = b->cap < 65536 ? 65536 : 2 * b->cap;
    char *nb = realloc(b->buf, cap);
    if (!nb) {
      errno = ENOMEM;
      return -2;
    }
    b->buf = nb;
    b->cap = cap;
  }
  for (;;) {
    ssize_t r = read(fd, b->buf + b->len, b->cap - b->len);
    if (r > 0) b->len += (size_t)r;
    if (r >= 0) return r;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : -2;
  }
}

long long kevo_link_spin_until(kevo_link_spin *s) {
  s->waits++;
  if (KEVO_LINK_SPIN_US <= 0 || !s->allowed) return 0;
  if (s->skip > 0) {
    s->skip--;
    return 0;
  }
  s->spins++;
  return kevo_link_now_ns() + (long long)KEVO_LINK_SPIN_US * 1000;
}

void kevo_link_spun(kevo_link_spin *s, int hit) {
  if (hit) {
    s->hits++;
    s->misses = 0;
    return;
  }
  if (s->misses < 6) s->misses++;
  s->skip = 1 << s->misses; /* 2 .. 64 */
  if (s->skip > KEVO_LINK_SPIN_BACKOFF_MAX) s->skip = KEVO_LINK_SPIN_BACKOFF_MAX;
}

long long kevo_link_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void kevo_link_free(kevo_link_buf *b) {
  free(b->buf);
  memset(b, 0, sizeof *b);
}
