#include "redis_queue.h"

#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

long long rq_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double rq_clock_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1000 + (double)ts.tv_nsec / 1e6;
}

static int copy_part(char *dst, size_t cap, const char *src, size_t n) {
  if (n >= cap) return -1;
  memcpy(dst, src, n);
  dst[n] = '\0';
  return 0;
}

int rq_url_parse(const char *text, const char *password_env, rq_url *out, kevo_error *err) {
  memset(out, 0, sizeof *out);
  out->port = 6379;
  if (!text || strncmp(text, "redis://", 8))
    return kevo_fail(err, KEVO_E_ARG, "a Redis URL starts with redis:// (redis://host:6379/0)");
  const char *p = text + 8;
  const char *slash = strchr(p, '/');
  const char *end = slash ? slash : p + strlen(p);
  const char *at = NULL;
  for (const char *q = p; q < end; q++)
    if (*q == '@') at = q;
  if (at) { /* [user][:password]@ */
    const char *colon = memchr(p, ':', (size_t)(at - p));
    if (colon) {
      if (copy_part(out->user, sizeof out->user, p, (size_t)(colon - p)) ||
          copy_part(out->password, sizeof out->password, colon + 1, (size_t)(at - colon - 1)))
        return kevo_fail(err, KEVO_E_ARG, "the Redis URL's user or password is too long");
    } else if (copy_part(out->user, sizeof out->user, p, (size_t)(at - p))) {
      return kevo_fail(err, KEVO_E_ARG, "the Redis URL's user name is too long");
    }
    p = at + 1;
  }
  const char *host_end;
  if (*p == '[') { /* [::1]:6379 */
    const char *close = memchr(p, ']', (size_t)(end - p));
    if (!close) return kevo_fail(err, KEVO_E_ARG, "the Redis URL's host: an unclosed '['");
    if (copy_part(out->host, sizeof out->host, p + 1, (size_t)(close - p - 1)))
      return kevo_fail(err, KEVO_E_ARG, "the Redis URL's host is too long");
    host_end = close + 1;
  } else {
    host_end = memchr(p, ':', (size_t)(end - p));
    if (!host_end) host_end = end;
    if (copy_part(out->host, sizeof out->host, p, (size_t)(host_end - p)))
      return kevo_fail(err, KEVO_E_ARG, "the Redis URL's host is too long");
  }
  if (!out->host[0]) return kevo_fail(err, KEVO_E_ARG, "the Redis URL names no host");
  if (host_end < end) {
    if (*host_end != ':') return kevo_fail(err, KEVO_E_ARG, "the Redis URL: junk after the host");
    char *e;
    long port = strtol(host_end + 1, &e, 10);
    if (e != end || port < 1 || port > 65535)
      return kevo_fail(err, KEVO_E_ARG, "the Redis URL's port must be 1..65535");
    out->port = (int)port;
  }
  if (slash && slash[1]) {
    char *e;
    long db = strtol(slash + 1, &e, 10);
    if (*e || db < 0 || db > 1000000)
      return kevo_fail(err, KEVO_E_ARG, "the Redis URL's database must be a number (/0)");
    out->db = (int)db;
  }
  if (password_env && *password_env) {
    const char *pw = getenv(password_env);
    if (!pw)
      return kevo_fail(err, KEVO_E_ARG, "the Redis password variable %s is not set", password_env);
    if (copy_part(out->password, sizeof out->password, pw, strlen(pw)))
      return kevo_fail(err, KEVO_E_ARG, "the Redis password in %s is too long", password_env);
  }
  snprintf(out->shown, sizeof out->shown, "redis://%s%s%s:%d/%d", strchr(out->host, ':') ? "[" : "",
           out->host, strchr(out->host, ':') ? "]" : "", out->port, out->db);
  return KEVO_OK;
}

void rq_close(rq_conn *c) {
  if (c->ctx) redisFree(c->ctx);
  c->ctx = NULL;
}

static struct timeval tv_of(int ms) {
  return (struct timeval){.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
}

/* One connection attempt: KEVO_E_IO when the server cannot be reached (worth retrying),
 * KEVO_E_ARG when it refuses us (a password, a database: not worth retrying). */
static int connect_once(rq_conn *c, kevo_error *err) {
  rq_close(c);
  c->ctx = redisConnectWithTimeout(c->url.host, c->url.port, tv_of(c->timeout_ms));
  if (!c->ctx || c->ctx->err) {
    int rc = kevo_fail(err, KEVO_E_IO, "cannot reach the Redis server at %s: %s", c->url.shown,
                       c->ctx ? c->ctx->errstr : "out of memory");
    rq_close(c);
    return rc;
  }
  redisSetTimeout(c->ctx, tv_of(c->timeout_ms));
  redisEnableKeepAlive(c->ctx);
  redisReply *r = NULL;
  if (c->url.password[0]) {
    r = c->url.user[0] ? redisCommand(c->ctx, "AUTH %s %s", c->url.user, c->url.password)
                       : redisCommand(c->ctx, "AUTH %s", c->url.password);
    if (!r) goto lost;
    if (r->type == REDIS_REPLY_ERROR) {
      int rc = kevo_fail(err, KEVO_E_ARG, "the Redis server at %s refused the password: %s",
                         c->url.shown, r->str);
      freeReplyObject(r);
      rq_close(c);
      return rc;
    }
    freeReplyObject(r);
  }
  r = redisCommand(c->ctx, "SELECT %d", c->url.db);
  if (!r) goto lost;
  if (r->type == REDIS_REPLY_ERROR) {
    int noauth = !strncmp(r->str, "NOAUTH", 6);
    int rc = kevo_fail(err, KEVO_E_ARG, "the Redis server at %s %s: %s", c->url.shown,
                       noauth ? "wants a password (--password-env VAR names the variable "
                                "that holds it)"
                              : "refused the database",
                       r->str);
    freeReplyObject(r);
    rq_close(c);
    return rc;
  }
  freeReplyObject(r);
  return KEVO_OK;
lost:;
  int rc = kevo_fail(err, KEVO_E_IO, "lost the Redis server at %s while connecting: %s",
                     c->url.shown, c->ctx->errstr);
  rq_close(c);
  return rc;
}

int rq_connect(rq_conn *c, const rq_url *url, int timeout_ms, kevo_error *err) {
  memset(c, 0, sizeof *c);
  c->url = *url;
  c->timeout_ms = timeout_ms > 0 ? timeout_ms : 5000;
  return connect_once(c, err);
}

int rq_command(rq_conn *c, int argc, const char **argv, const size_t *lens, long long deadline_ms,
               int extra_ms, const char *ok_error, redisReply **out, kevo_error *err) {
  *out = NULL;
  int pause_ms = 50, had = c->ctx != NULL;
  for (;;) {
    int rc = KEVO_OK;
    if (!c->ctx) {
      rc = connect_once(c, err);
      if (rc == KEVO_E_ARG) return rc;
      if (!rc && had) c->reconnects++;
    }
    if (!rc) {
      if (extra_ms) redisSetTimeout(c->ctx, tv_of(c->timeout_ms + extra_ms));
      redisReply *r = redisCommandArgv(c->ctx, argc, argv, lens);
      if (r && extra_ms) redisSetTimeout(c->ctx, tv_of(c->timeout_ms));
      if (r && r->type == REDIS_REPLY_ERROR &&
          !(ok_error && !strncmp(r->str, ok_error, strlen(ok_error)))) {
        rc = kevo_fail(err, KEVO_E_WORKER, "Redis %s at %s: %s", argv[0], c->url.shown, r->str);
        freeReplyObject(r);
        return rc;
      }
      if (r) {
        *out = r;
        return KEVO_OK;
      }
      rc = kevo_fail(err, KEVO_E_IO, "lost the Redis server at %s: %s", c->url.shown,
                     c->ctx->errstr);
      rq_close(c);
    }
    had = 1;
    long long left = deadline_ms < 0 ? 0 : deadline_ms - rq_now_ms();
    if (left <= 0 || (c->stop && *c->stop)) return rc;
    usleep((useconds_t)(pause_ms < left ? pause_ms : left) * 1000);
    if (pause_ms < 1000) pause_ms *= 2;
  }
}

int rq_commandv(rq_conn *c, long long deadline_ms, int extra_ms, redisReply **out, kevo_error *err,
                ...) {
  const char *argv[32];
  size_t lens[32];
  int argc = 0;
  va_list ap;
  va_start(ap, err);
  for (const char *a; argc < 32 && (a = va_arg(ap, const char *));) {
    argv[argc] = a;
    lens[argc++] = strlen(a);
  }
  va_end(ap);
  return rq_command(c, argc, argv, lens, deadline_ms, extra_ms, NULL, out, err);
}

int rq_arch_base(const char *arch, char *base, size_t cap, kevo_error *err) {
  size_t n = 0;
  if (arch && !strncmp(arch, "sm_", 3))
    while (isdigit((unsigned char)arch[3 + n]))
      n++;
  const char *rest = arch ? arch + 3 + n : "";
  if (n < 2 || n > 3 || (*rest && strcmp(rest, "a") && strcmp(rest, "f")) || cap < n + 4)
    return kevo_fail(err, KEVO_E_ARG, "arch '%s': expected sm_NN (like sm_90)", arch ? arch : "");
  snprintf(base, cap, "sm_%.*s", (int)n, arch + 3);
  return KEVO_OK;
}

void rq_key(char *out, size_t cap, const char *kind, const char *name) {
  snprintf(out, cap, "kevo:%s:%s", kind, name);
}

int rq_ensure_group(rq_conn *c, const char *stream, long long deadline_ms, kevo_error *err) {
  const char *argv[] = {"XGROUP", "CREATE", stream, RQ_GROUP, "0", "MKSTREAM"};
  size_t lens[6];
  for (int i = 0; i < 6; i++)
    lens[i] = strlen(argv[i]);
  redisReply *r;
  int rc = rq_command(c, 6, argv, lens, deadline_ms, 0, "BUSYGROUP", &r, err);
  if (!rc) freeReplyObject(r);
  return rc;
}

/* now: the server's clock in ms */
#define RQ_LUA_NOW                                                                                 \
  "local t = redis.call('TIME')\n"                                                                 \
  "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"

const char RQ_LUA_HEARTBEAT[] = RQ_LUA_NOW
    "redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])\n"
    "redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])\n"
    "for _, g in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - 3600000)) do\n"
    "  redis.call('ZREM', KEYS[1], g) redis.call('HDEL', KEYS[2], g)\n"
    "end\n"
    "return now\n";

const char RQ_LUA_LEAVE[] = "redis.call('ZREM', KEYS[1], ARGV[1])\n"
                            "redis.call('HDEL', KEYS[2], ARGV[1])\n"
                            "return 1\n";

const char RQ_LUA_ALIVE[] =
    RQ_LUA_NOW "local live = redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf')\n"
               "local out = {#live}\n"
               "for i, w in ipairs(live) do out[i + 1] = redis.call('HGET', KEYS[2], w) or '' end\n"
               "return out\n";

const char RQ_LUA_COMPLETE[] = "local first = 0\n"
                               "if redis.call('SET', KEYS[1], 'done', 'NX', 'EX', ARGV[2]) then\n"
                               "  redis.call('RPUSH', KEYS[2], ARGV[1])\n"
                               "  redis.call('EXPIRE', KEYS[2], ARGV[2])\n"
                               "  first = 1\n"
                               "end\n"
                               "redis.pcall('XACK', KEYS[3], ARGV[3], ARGV[4])\n"
                               "redis.pcall('XDEL', KEYS[3], ARGV[4])\n"
                               "return first\n";

const char RQ_LUA_SCREEN[] = RQ_LUA_NOW
    "if redis.call('EXISTS', KEYS[1]) == 1 then\n"
    "  redis.pcall('XACK', KEYS[3], ARGV[1], ARGV[2])\n"
    "  redis.pcall('XDEL', KEYS[3], ARGV[2])\n"
    "  return {1, 0, now}\n"
    "end\n"
    "local p = redis.pcall('XPENDING', KEYS[3], ARGV[1], ARGV[2], ARGV[2], 1)\n"
    "local n = 1\n"
    "if type(p) == 'table' and type(p[1]) == 'table' then n = p[1][4] end\n"
    "if n > tonumber(ARGV[4]) then return {2, n, now, redis.call('LRANGE', KEYS[2], 0, -1)} end\n"
    "redis.call('RPUSH', KEYS[2], ARGV[3])\n"
    "redis.call('EXPIRE', KEYS[2], 3600)\n"
    "return {0, n, now}\n";

const char RQ_LUA_CANCEL[] =
    "if redis.call('SET', KEYS[1], 'cancelled', 'NX', 'EX', ARGV[1]) then\n"
    "  redis.pcall('XACK', KEYS[2], ARGV[2], ARGV[3])\n"
    "  redis.pcall('XDEL', KEYS[2], ARGV[3])\n"
    "  return 1\n"
    "end\n"
    "return 0\n";

int rq_frame_encode(cJSON *header, const kevo_blob *blobs, size_t nblobs, char **out, size_t *len,
                    kevo_error *err) {
  *out = NULL;
  *len = 0;
  if (nblobs > KEVO_PROTO_MAX_BLOBS)
    return kevo_fail(err, KEVO_E_ARG, "a frame carries at most %d blobs", KEVO_PROTO_MAX_BLOBS);
  cJSON *sizes = cJSON_CreateArray();
  size_t total = 0;
  for (size_t i = 0; sizes && i < nblobs; i++) {
    cJSON_AddItemToArray(sizes, cJSON_CreateNumber((double)blobs[i].size));
    total += blobs[i].size;
  }
  cJSON_DeleteItemFromObjectCaseSensitive(header, "blobs");
  if (!sizes || !cJSON_AddItemToObject(header, "blobs", sizes))
    return kevo_fail(err, KEVO_E_NOMEM, "no memory for a frame");
  char *text = cJSON_PrintUnformatted(header);
  if (!text) return kevo_fail(err, KEVO_E_NOMEM, "no memory for a frame");
  size_t hlen = strlen(text);
  if (hlen > KEVO_PROTO_MAX_HEADER) {
    free(text);
    return kevo_fail(err, KEVO_E_NOMEM, "a frame's header over %d bytes", KEVO_PROTO_MAX_HEADER);
  }
  char *buf = malloc(4 + hlen + total);
  if (!buf) {
    free(text);
    return kevo_fail(err, KEVO_E_NOMEM, "no memory for a frame of %zu bytes", 4 + hlen + total);
  }
  uint32_t n = (uint32_t)hlen;
  unsigned char le[4] = {n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, n >> 24};
  memcpy(buf, le, 4);
  memcpy(buf + 4, text, hlen);
  free(text);
  size_t off = 4 + hlen;
  for (size_t i = 0; i < nblobs; i++) {
    if (blobs[i].size) memcpy(buf + off, blobs[i].data, blobs[i].size);
    off += blobs[i].size;
  }
  *out = buf;
  *len = off;
  return KEVO_OK;
}

int rq_frame_decode(const char *buf, size_t len, kevo_frame *out, kevo_error *err) {
  memset(out, 0, sizeof *out);
  if (len < 4) return kevo_fail(err, KEVO_E_PARSE, "a reply shorter than a frame's length");
  const unsigned char *u = (const unsigned char *)buf;
  size_t hlen = (size_t)u[0] | (size_t)u[1] << 8 | (size_t)u[2] << 16 | (size_t)u[3] << 24;
  if (hlen > len - 4 || hlen > KEVO_PROTO_MAX_HEADER)
    return kevo_fail(err, KEVO_E_PARSE, "a reply frame's header runs past its end");
  out->header = cJSON_ParseWithLength(buf + 4, hlen);
  if (!cJSON_IsObject(out->header)) {
    kevo_frame_free(out);
    return kevo_fail(err, KEVO_E_PARSE, "a reply frame's header is no JSON object");
  }
  const cJSON *sizes = cJSON_GetObjectItemCaseSensitive(out->header, "blobs");
  size_t off = 4 + hlen, n = (size_t)cJSON_GetArraySize(sizes);
  if ((sizes && !cJSON_IsArray(sizes)) || n > KEVO_PROTO_MAX_BLOBS) {
    kevo_frame_free(out);
    return kevo_fail(err, KEVO_E_PARSE, "a reply frame's \"blobs\" is no list of sizes");
  }
  for (size_t i = 0; i < n; i++) {
    const cJSON *s = cJSON_GetArrayItem(sizes, (int)i);
    double d = cJSON_IsNumber(s) ? s->valuedouble : -1;
    if (d < 0 || d > (double)(len - off)) {
      kevo_frame_free(out);
      return kevo_fail(err, KEVO_E_PARSE, "a reply frame's blob %zu runs past its end", i);
    }
    size_t bs = (size_t)d;
    out->blobs[i].data = malloc(bs ? bs : 1);
    if (!out->blobs[i].data) {
      kevo_frame_free(out);
      return kevo_fail(err, KEVO_E_NOMEM, "no memory for a reply's blob of %zu bytes", bs);
    }
    if (bs) memcpy(out->blobs[i].data, buf + off, bs);
    out->blobs[i].size = bs;
    out->nblobs = i + 1;
    off += bs;
  }
  if (off != len) {
    kevo_frame_free(out);
    return kevo_fail(err, KEVO_E_PARSE, "a reply frame with %zu bytes past its blobs", len - off);
  }
  return KEVO_OK;
}

void rq_job_id(char out[33]) {
  unsigned char b[16];
  if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) { /* never on Linux >= 3.17 */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
    for (int i = 0; i < 16; i++)
      b[i] = (unsigned char)(x >> (8 * (i % 8))) ^ (unsigned char)i;
  }
  for (int i = 0; i < 16; i++)
    snprintf(out + 2 * i, 3, "%02x", b[i]);
}
