/* resources.h: files embedded into the binary at build time (lua/, strategies/, python/). */
#ifndef KEVO_RESOURCES_H
#define KEVO_RESOURCES_H

#include <stddef.h>

struct kevo_resource {
  const char *name; /* path relative to the source tree, e.g. "lua/kevo/init.lua" */
  const char *data; /* NUL-terminated */
  size_t size;      /* without the NUL */
};

extern const struct kevo_resource kevo_resources[]; /* ends with a NULL name */

/* The resource at path `name`, or NULL. */
const struct kevo_resource *kevo_resource_find(const char *name);

#endif
