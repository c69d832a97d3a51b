/* cuda_cache.c: the compile cache (memory, then disk). See cuda_cache.h. */
#include "cuda_cache.h"

#include "buf.h"
#include "sha256.h"
#include "status.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MEM_ENTRIES = 256, CACHE_VERSION = 2 }; /* 2: artifacts */
#define MAX_ENTRY_BYTES ((size_t)64 << 20)

typedef struct mem_entry {
  cuda_module *m;
  unsigned long long used; /* tick of the last get or put */
} mem_entry;

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static mem_entry mem[MEM_ENTRIES];
static unsigned long long mem_tick;

static cuda_module *mem_get(const char *hash) {
  cuda_module *copy = NULL;
  pthread_mutex_lock(&mem_lock);
  for (int i = 0; i < MEM_ENTRIES; i++) {
    if (mem[i].m && strcmp(mem[i].m->hash, hash) == 0) {
      mem[i].used = ++mem_tick;
      copy = cuda_module_clone(mem[i].m);
      break;
    }
  }
  pthread_mutex_unlock(&mem_lock);
  return copy;
}

static void mem_put(const cuda_module *m) {
  cuda_module *copy = cuda_module_clone(m);
  if (!copy) return;
  cuda_module *drop = NULL;
  pthread_mutex_lock(&mem_lock);
  int slot = -1;
  for (int i = 0; i < MEM_ENTRIES && slot < 0; i++)
    if (mem[i].m && strcmp(mem[i].m->hash, m->hash) == 0) slot = i;
  for (int i = 0; i < MEM_ENTRIES && slot < 0; i++)
    if (!mem[i].m) slot = i;
  if (slot < 0) {
    slot = 0;
    for (int i = 1; i < MEM_ENTRIES; i++)
      if (mem[i].used < mem[slot].used) slot = i;
  }
  drop = mem[slot].m;
  mem[slot].m = copy;
  mem[slot].used = ++mem_tick;
  pthread_mutex_unlock(&mem_lock);
  cuda_module_free(drop);
}

void cuda_cache_clear_memory(void) {
  pthread_mutex_lock(&mem_lock);
  for (int i = 0; i < MEM_ENTRIES; i++) {
    cuda_module_free(mem[i].m);
    mem[i].m = NULL;
  }
  pthread_mutex_unlock(&mem_lock);
}

/* ---- disk --------------------------------------------------------------------------------- */

int cuda_cache_dir(char *buf, size_t n) {
  const char *env = getenv("KEVO_CACHE");
  if (env && strcmp(env, "off") == 0) return 0;
  int w;
  if (env && *env)
    w = snprintf(buf, n, "%s", env);
  else if ((env = getenv("XDG_CACHE_HOME")) && *env)
    w = snprintf(buf, n, "%s/kevo", env);
  else if ((env = getenv("HOME")) && *env)
    w = snprintf(buf, n, "%s/.cache/kevo", env);
  else
    return 0;
  return w > 0 && (size_t)w < n;
}

static int mkdir_p(char *path) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    int rc = mkdir(path, 0755);
    *p = '/';
    if (rc && errno != EEXIST) return -1;
  }
  return mkdir(path, 0755) && errno != EEXIST ? -1 : 0;
}

/* The entry's path without extension ("<dir>/cuda/ab/abcd..."); 0 when there is no disk. */
static int entry_base(const char *hash, char *buf, size_t n, int make_dir) {
  char dir[3072];
  if (!cuda_cache_dir(dir, sizeof dir)) return 0;
  char sub[3200];
  snprintf(sub, sizeof sub, "%s/cuda/%.2s", dir, hash);
  if (make_dir && mkdir_p(sub)) return 0;
  int w = snprintf(buf, n, "%s/%s", sub, hash);
  return w > 0 && (size_t)w < n;
}

static int write_atomic(const char *path, const void *data, size_t len) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) return -1;
  const char *p = data;
  size_t left = len;
  while (left) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    p += w;
    left -= (size_t)w;
  }
  int rc = left == 0 && fchmod(fd, 0644) == 0 ? 0 : -1;
  if (close(fd)) rc = -1;
  if (rc == 0 && rename(tmp, path)) rc = -1;
  if (rc) unlink(tmp);
  return rc;
}

static char *entry_json(const cuda_module *m) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  char sum[KEVO_HASH_HEX] = "";
  if (m->cubin) kevo_sha256_hex(m->cubin, m->cubin_size, sum);
  cJSON_AddNumberToObject(o, "v", CACHE_VERSION);
  cJSON_AddStringToObject(o, "hash", m->hash);
  cJSON_AddBoolToObject(o, "ok", m->ok);
  cJSON_AddStringToObject(o, "arch", m->arch);
  cJSON_AddNumberToObject(o, "cubin_size", (double)(m->cubin ? m->cubin_size : 0));
  cJSON_AddNumberToObject(o, "artifacts", m->artifacts);
  cJSON_AddStringToObject(o, "cubin_sha256", sum);
  cJSON_AddStringToObject(o, "log", m->log ? m->log : "");
  cJSON *ds = cJSON_AddArrayToObject(o, "diagnostics");
  for (size_t i = 0; ds && i < m->ndiags; i++) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddItemToArray(ds, d);
    cJSON_AddNumberToObject(d, "line", m->diags[i].line);
    cJSON_AddNumberToObject(d, "col", m->diags[i].col);
    cJSON_AddStringToObject(d, "severity", m->diags[i].severity);
    cJSON_AddStringToObject(d, "message", m->diags[i].message);
  }
  cJSON *ks = cJSON_AddArrayToObject(o, "kernels");
  for (size_t i = 0; ks && i < m->nkernels; i++) {
    const cuda_kernel_info *k = &m->kernels[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToArray(ks, j);
    cJSON_AddStringToObject(j, "name", k->name);
    cJSON_AddNumberToObject(j, "registers", k->registers);
    cJSON_AddNumberToObject(j, "shared_static", k->shared_static);
    cJSON_AddNumberToObject(j, "local_bytes", k->local_bytes);
    cJSON_AddNumberToObject(j, "spill_stores", k->spill_stores);
    cJSON_AddNumberToObject(j, "spill_loads", k->spill_loads);
  }
  char *text = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return text;
}

static void disk_put(const cuda_module *m) {
  char base[4096], path[4200];
  if (!entry_base(m->hash, base, sizeof base, 1)) return;
  if (m->cubin) {
    snprintf(path, sizeof path, "%s.cubin", base);
    if (write_atomic(path, m->cubin, m->cubin_size)) return;
  }
  char *json = entry_json(m);
  if (!json) return;
  snprintf(path, sizeof path, "%s.json", base);
  write_atomic(path, json, strlen(json));
  free(json);
}

static int get_int(const cJSON *o, const char *key, int *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v)) return -1;
  *out = (int)v->valuedouble;
  return 0;
}

static const char *get_str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Fills m from a parsed entry; -1 on anything missing or malformed. */
static int entry_load(const cJSON *o, const char *hash, const char *base, cuda_module *m) {
  int v, ok;
  const char *h = get_str(o, "hash"), *arch = get_str(o, "arch"), *log = get_str(o, "log");
  const char *sum = get_str(o, "cubin_sha256");
  const cJSON *size = cJSON_GetObjectItemCaseSensitive(o, "cubin_size");
  const cJSON *okv = cJSON_GetObjectItemCaseSensitive(o, "ok");
  const cJSON *ds = cJSON_GetObjectItemCaseSensitive(o, "diagnostics");
  const cJSON *ks = cJSON_GetObjectItemCaseSensitive(o, "kernels");
  if (get_int(o, "v", &v) || v != CACHE_VERSION || !h || strcmp(h, hash) || !arch || !log || !sum ||
      !cJSON_IsNumber(size) || !cJSON_IsBool(okv) || !cJSON_IsArray(ds) || !cJSON_IsArray(ks))
    return -1;
  ok = cJSON_IsTrue(okv);
  m->ok = ok;
  const cJSON *art = cJSON_GetObjectItemCaseSensitive(o, "artifacts");
  m->artifacts = cJSON_IsNumber(art) ? (unsigned)art->valuedouble : 0;
  snprintf(m->hash, sizeof m->hash, "%s", hash);
  snprintf(m->arch, sizeof m->arch, "%s", arch);
  if (!(m->log = strdup(log))) return -1;
  if (ok) {
    char path[4200];
    kevo_buf b;
    kevo_error err = {0};
    kevo_buf_init(&b, MAX_ENTRY_BYTES);
    snprintf(path, sizeof path, "%s.cubin", base);
    char got[KEVO_HASH_HEX];
    if (kevo_read_file(path, &b, &err) || b.len != (size_t)size->valuedouble || b.len == 0) {
      kevo_buf_free(&b);
      return -1;
    }
    kevo_sha256_hex(b.data, b.len, got);
    m->cubin = (unsigned char *)kevo_buf_steal(&b, &m->cubin_size);
    if (strcmp(got, sum)) return -1;
  }
  int nd = cJSON_GetArraySize(ds), nk = cJSON_GetArraySize(ks);
  if (nd && !(m->diags = calloc((size_t)nd, sizeof *m->diags))) return -1;
  if (nk && !(m->kernels = calloc((size_t)nk, sizeof *m->kernels))) return -1;
  const cJSON *it;
  cJSON_ArrayForEach(it, ds) {
    cuda_diag *d = &m->diags[m->ndiags];
    const char *sev = get_str(it, "severity"), *msg = get_str(it, "message");
    if (!sev || !msg || get_int(it, "line", &d->line) || get_int(it, "col", &d->col)) return -1;
    snprintf(d->severity, sizeof d->severity, "%s", sev);
    if (!(d->message = strdup(msg))) return -1;
    m->ndiags++;
  }
  cJSON_ArrayForEach(it, ks) {
    cuda_kernel_info *k = &m->kernels[m->nkernels];
    const char *name = get_str(it, "name");
    if (!name || get_int(it, "registers", &k->registers) ||
        get_int(it, "shared_static", &k->shared_static) ||
        get_int(it, "local_bytes", &k->local_bytes) ||
        get_int(it, "spill_stores", &k->spill_stores) ||
        get_int(it, "spill_loads", &k->spill_loads))
      return -1;
    if (!(k->name = strdup(name))) return -1;
    m->nkernels++;
  }
  return 0;
}

static cuda_module *disk_get(const char *hash) {
  char base[4096], path[4200];
  if (!entry_base(hash, base, sizeof base, 0)) return NULL;
  snprintf(path, sizeof path, "%s.json", base);
  kevo_buf b;
  kevo_error err = {0};
  kevo_buf_init(&b, MAX_ENTRY_BYTES);
  if (kevo_read_file(path, &b, &err)) {
    kevo_buf_free(&b);
    return NULL;
  }
  cJSON *o = cJSON_ParseWithLength(b.data, b.len);
  kevo_buf_free(&b);
  cuda_module *m = calloc(1, sizeof *m);
  if (!o || !m || entry_load(o, hash, base, m)) {
    cuda_module_free(m);
    m = NULL;
  }
  cJSON_Delete(o);
  return m;
}

int cuda_cache_get(const char *hash, cuda_module **out) {
  if ((*out = mem_get(hash))) return 1;
  if ((*out = disk_get(hash))) {
    mem_put(*out);
    return 2;
  }
  return 0;
}

void cuda_cache_put(const cuda_module *m) {
  mem_put(m);
  disk_put(m);
}
