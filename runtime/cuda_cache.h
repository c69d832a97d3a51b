/* cuda_cache.h: the compile cache of cuda_compile.c, keyed by content hash. A bounded in-memory
 * table (most recently used kept) in front of a directory on disk:
 *   $KEVO_CACHE (the word "off" disables the disk), else $XDG_CACHE_HOME/kevo, else
 *   ~/.cache/kevo; entries are cuda/<h[0:2]>/<hash>.cubin and <hash>.json (log,
 *   diagnostics, resources, the cubin's size and SHA-256), each written to a temporary
 *   file and renamed into place, JSON last. An entry that fails any check is a miss and is
 *   rewritten by the next compile. All functions are thread safe. Internal to cuda*.c. */
#ifndef KEVO_CUDA_CACHE_H
#define KEVO_CUDA_CACHE_H

#include <stddef.h>

#include "cuda_module.h"

/* A fresh copy of the entry for hash: returns 1 (memory), 2 (disk) or 0 (miss, or out of
 * memory). */
int cuda_cache_get(const char *hash, cuda_module **out);
/* Stores a copy of m (a finished compile, good or failed) in memory and on disk. Disk
 * trouble is not an error: the cache is an optimisation. */
void cuda_cache_put(const cuda_module *m);
/* Drops the in-memory entries (the disk stays). */
void cuda_cache_clear_memory(void);
/* The disk cache directory into buf; 0 when the disk cache is off or has no home. */
int cuda_cache_dir(char *buf, size_t n);

#endif
