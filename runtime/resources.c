#include "resources.h"

#include <string.h>

const struct kevo_resource *kevo_resource_find(const char *name) {
  for (const struct kevo_resource *r = kevo_resources; r->name; r++)
    if (strcmp(r->name, name) == 0) return r;
  return NULL;
}
