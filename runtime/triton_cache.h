/* triton_cache.h: the Triton compile cache (internal to triton.c). Replies of the compile server
 * (its JSON header and the cubin) keyed by content hash: in memory (successes and compile errors,
 * capped in entries and bytes, oldest out first) and on disk (successes only) under
 * $KEVO_CACHE, else $XDG_CACHE_HOME/kevo, else ~/.cache/kevo, in triton/<hash>.{cubin,json}.
 * Disk entries are written to a temporary name and renamed, the .json last: a reader sees a
 * whole entry or none. Only kevo writes the cache, from a reply of a compile process that
 * compiled that one request (no compile process can touch another's result, nor this
 * directory), under the key kevo hashed; the .json also records that key and the cubin's
 * SHA-256, and an entry that does not match both (or whose cubin is not an ELF file) is a miss. */
#ifndef KEVO_TRITON_CACHE_H
#define KEVO_TRITON_CACHE_H

#include <stddef.h>

#include "buf.h"

typedef struct cJSON cJSON;
typedef struct triton_cache triton_cache;

/* A cache; disk = 0 keeps it in memory only (also when no cache directory can be made). */
triton_cache *triton_cache_new(int disk);
void triton_cache_free(triton_cache *c);

/* A copy of a remembered reply (*reply to delete, cubin filled): 1 from memory, 2 from disk
 * (then also remembered in memory), 0 when there is none. */
int triton_cache_get(triton_cache *c, const char *hash, cJSON **reply, kevo_buf *cubin);
/* Remembers a reply; to disk too when to_disk and there is a cubin. */
void triton_cache_put(triton_cache *c, const char *hash, const cJSON *reply, const void *cubin,
                      size_t size, int to_disk);

/* Writes a file whole (temporary name, then rename). 0 or -1 with errno. */
int triton_write_file(const char *path, const void *data, size_t len, int mode);

#endif
