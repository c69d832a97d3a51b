/* cuda_module.c: a compiled module's life: its deep copy and its release (cuda_module.h). */
#include "cuda_module.h"

#include <stdlib.h>
#include <string.h>

static char *dup_str(const char *s) {
  return s ? strdup(s) : NULL;
}

void cuda_module_free(cuda_module *m) {
  if (!m) return;
  free(m->cubin);
  free(m->log);
  for (size_t i = 0; i < m->ndiags; i++)
    free(m->diags[i].message);
  free(m->diags);
  for (size_t i = 0; i < m->nkernels; i++)
    free(m->kernels[i].name);
  free(m->kernels);
  free(m);
}

cuda_module *cuda_module_clone(const cuda_module *m) {
  cuda_module *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  *c = *m;
  c->cubin = NULL;
  c->log = NULL;
  c->diags = NULL;
  c->kernels = NULL;
  c->ndiags = c->nkernels = 0;
  if (m->cubin) {
    c->cubin = malloc(m->cubin_size ? m->cubin_size : 1);
    if (!c->cubin) goto fail;
    memcpy(c->cubin, m->cubin, m->cubin_size);
  }
  if (m->log && !(c->log = dup_str(m->log))) goto fail;
  if (m->ndiags) {
    c->diags = calloc(m->ndiags, sizeof *c->diags);
    if (!c->diags) goto fail;
    for (; c->ndiags < m->ndiags; c->ndiags++) {
      c->diags[c->ndiags] = m->diags[c->ndiags];
      c->diags[c->ndiags].message = dup_str(m->diags[c->ndiags].message);
      if (!c->diags[c->ndiags].message) goto fail;
    }
  }
  if (m->nkernels) {
    c->kernels = calloc(m->nkernels, sizeof *c->kernels);
    if (!c->kernels) goto fail;
    for (; c->nkernels < m->nkernels; c->nkernels++) {
      c->kernels[c->nkernels] = m->kernels[c->nkernels];
      c->kernels[c->nkernels].name = dup_str(m->kernels[c->nkernels].name);
      if (!c->kernels[c->nkernels].name) goto fail;
    }
  }
  return c;
fail:
  cuda_module_free(c);
  return NULL;
}
