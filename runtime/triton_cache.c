/* triton_cache.c: the Triton compile cache. See triton_cache.h. */
#include "triton_cache.h"

#include "sha256.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MEM_ENTRIES = 512 };
#define MEM_BYTES ((size_t)256 << 20)

typedef struct entry {
  char hash[KEVO_HASH_HEX];
  cJSON *reply;
  unsigned char *cubin;
  size_t size;
} entry;

struct triton_cache {
  char dir[PATH_MAX]; /* empty: no disk cache */
  entry mem[MEM_ENTRIES];
  size_t n, next_out, bytes;
};

/* $KEVO_CACHE, else $XDG_CACHE_HOME/kevo, else ~/.cache/kevo; then triton/. Empty on failure. */
static void find_dir(char *out, size_t n) {
  const char *k = getenv("KEVO_CACHE"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
  char base[PATH_MAX];
  if (k && *k)
    snprintf(base, sizeof base, "%s", k);
  else if (x && *x)
    snprintf(base, sizeof base, "%s/kevo", x);
  else if (h && *h)
    snprintf(base, sizeof base, "%s/.cache/kevo", h);
  else {
    out[0] = 0;
    return;
  }
  snprintf(out, n, "%s/triton", base);
  for (char *s = out + 1; *s; s++) {
    if (*s != '/') continue;
    *s = 0;
    mkdir(out, 0755);
    *s = '/';
  }
  if (mkdir(out, 0755) != 0 && errno != EEXIST) out[0] = 0;
}

int triton_write_file(const char *path, const void *data, size_t len, int mode) {
  char tmp[PATH_MAX + 32];
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return -1;
  const char *c = data;
  while (len > 0) {
    ssize_t w = write(fd, c, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      close(fd);
      unlink(tmp);
      return -1;
    }
    c += w;
    len -= (size_t)w;
  }
  if (close(fd) != 0 || rename(tmp, path) != 0) {
    unlink(tmp);
    return -1;
  }
  return 0;
}

/* A disk entry serves only the key it was written under, and only the cubin it was written
 * with: the .json names both (kevo_key, cubin_sha256), and a cubin is an ELF file. A renamed,
 * swapped or altered file is a miss, never a hit. */
static int entry_matches(const cJSON *reply, const char *hash, const void *cubin, size_t size) {
  const char *key = cJSON_GetStringValue(cJSON_GetObjectItem(reply, "kevo_key"));
  const char *want = cJSON_GetStringValue(cJSON_GetObjectItem(reply, "cubin_sha256"));
  char got[KEVO_HASH_HEX];
  if (!key || !want || strcmp(key, hash) != 0 || size < 4 || memcmp(cubin, "\177ELF", 4) != 0)
    return 0;
  kevo_sha256_hex(cubin, size, got);
  return strcmp(got, want) == 0;
}

triton_cache *triton_cache_new(int disk) {
  triton_cache *c = calloc(1, sizeof *c);
  if (c && disk) find_dir(c->dir, sizeof c->dir);
  return c;
}

void triton_cache_free(triton_cache *c) {
  if (!c) return;
  for (size_t i = 0; i < c->n; i++) {
    cJSON_Delete(c->mem[i].reply);
    free(c->mem[i].cubin);
  }
  free(c);
}

static entry *mem_find(triton_cache *c, const char *hash) {
  for (size_t i = 0; i < c->n; i++)
    if (!strcmp(c->mem[i].hash, hash)) return &c->mem[i];
  return NULL;
}

static void mem_put(triton_cache *c, const char *hash, const cJSON *reply, const void *cubin,
                    size_t size) {
  if (mem_find(c, hash) || size > MEM_BYTES / 4) return;
  while (c->n && (c->n == MEM_ENTRIES || c->bytes + size > MEM_BYTES)) {
    entry *old = &c->mem[c->next_out++ % c->n];
    c->bytes -= old->size;
    cJSON_Delete(old->reply);
    free(old->cubin);
    *old = c->mem[--c->n];
  }
  entry *e = &c->mem[c->n];
  e->reply = cJSON_Duplicate(reply, 1);
  e->cubin = size ? malloc(size) : NULL;
  if (!e->reply || (size && !e->cubin)) {
    cJSON_Delete(e->reply);
    free(e->cubin);
    return;
  }
  if (size) memcpy(e->cubin, cubin, size);
  e->size = size;
  snprintf(e->hash, sizeof e->hash, "%s", hash);
  c->bytes += size;
  c->n++;
}

int triton_cache_get(triton_cache *c, const char *hash, cJSON **reply, kevo_buf *cubin) {
  *reply = NULL;
  entry *e = mem_find(c, hash);
  if (e) {
    *reply = cJSON_Duplicate(e->reply, 1);
    if (*reply && (!e->size || kevo_buf_append(cubin, e->cubin, e->size) == 0)) return 1;
    cJSON_Delete(*reply);
    *reply = NULL;
    return 0;
  }
  if (!c->dir[0]) return 0;
  char path[PATH_MAX + 80];
  kevo_buf js;
  kevo_buf_init(&js, KEVO_TEXT_FILE_CAP);
  snprintf(path, sizeof path, "%s/%s.json", c->dir, hash);
  int found = 0;
  if (kevo_read_file(path, &js, NULL) == 0) {
    snprintf(path, sizeof path, "%s/%s.cubin", c->dir, hash);
    kevo_buf_reset(cubin);
    *reply = cJSON_Parse(js.data);
    if (*reply && kevo_read_file(path, cubin, NULL) == 0 && cubin->len > 0 &&
        entry_matches(*reply, hash, cubin->data, cubin->len)) {
      mem_put(c, hash, *reply, cubin->data, cubin->len);
      found = 2;
    } else {
      cJSON_Delete(*reply);
      *reply = NULL;
    }
  }
  kevo_buf_free(&js);
  return found;
}

void triton_cache_put(triton_cache *c, const char *hash, const cJSON *reply, const void *cubin,
                      size_t size, int to_disk) {
  mem_put(c, hash, reply, cubin, size);
  if (!to_disk || !c->dir[0] || !size) return;
  char path[PATH_MAX + 80];
  snprintf(path, sizeof path, "%s/%s.cubin", c->dir, hash);
  if (triton_write_file(path, cubin, size, 0644) != 0) return;
  cJSON *stamped = cJSON_Duplicate(reply, 1);
  char sha[KEVO_HASH_HEX];
  kevo_sha256_hex(cubin, size, sha);
  if (stamped) {
    cJSON_DeleteItemFromObject(stamped, "kevo_key");
    cJSON_DeleteItemFromObject(stamped, "cubin_sha256");
    cJSON_AddStringToObject(stamped, "kevo_key", hash);
    cJSON_AddStringToObject(stamped, "cubin_sha256", sha);
  }
  char *text = stamped ? cJSON_PrintUnformatted(stamped) : NULL;
  cJSON_Delete(stamped);
  snprintf(path, sizeof path, "%s/%s.json", c->dir, hash);
  if (text) triton_write_file(path, text, strlen(text), 0644);
  free(text);
}
