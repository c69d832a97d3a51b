/* recipe_knobs.c: the knobs a candidate's launch chunk sees (eval_request.h). */
#include "eval_request.h"

#include "eval_triton.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *skip_ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t'))
    p++;
  return p;
}

/* Parses "#<ws>word<ws>IDENT" at p; returns the end of IDENT (and IDENT) or NULL. */
static const char *directive(const char *p, const char *end, const char *word, const char **id,
                             size_t *idlen) {
  p = skip_ws(p, end);
  if (p >= end || *p != '#') return NULL;
  p = skip_ws(p + 1, end);
  size_t wl = strlen(word);
  if ((size_t)(end - p) < wl || memcmp(p, word, wl) != 0) return NULL;
  const char *q = skip_ws(p + wl, end);
  if (q == p + wl) return NULL;
  *id = q;
  while (q < end && (isalnum((unsigned char)*q) || *q == '_'))
    q++;
  *idlen = (size_t)(q - *id);
  return *idlen ? q : NULL;
}

static int knob_known(const recipe_knobs *ks, const kevo_recipe *r, const char *name) {
  for (size_t i = 0; i < ks->n; i++)
    if (!strcmp(ks->d[i].name, name)) return 1;
  for (size_t i = 0; i < r->nparams; i++)
    if (!strcmp(r->params[i].name, name)) return 1;
  return 0;
}

static void knob_add(recipe_knobs *ks, const kevo_recipe *r, const char *name, const char *value) {
  if (ks->n >= 128 || ks->nowned + 2 > 256 || knob_known(ks, r, name)) return;
  char *n = strdup(name), *val = strdup(value);
  if (n) ks->owned[ks->nowned++] = n;
  if (val) ks->owned[ks->nowned++] = val;
  if (n && val) ks->d[ks->n++] = (kevo_define){n, val};
}

/* A Triton source's defaults: `NAME: tl.constexpr = value`, and the compile options'. */
static void triton_defaults(const char *src, size_t len, const kevo_recipe *r, recipe_knobs *ks) {
  char names[EVTRI_MAX_DEFAULTS][64], values[EVTRI_MAX_DEFAULTS][32];
  size_t n = evtri_defaults(src, len, names, values, EVTRI_MAX_DEFAULTS);
  for (size_t i = 0; i < n; i++)
    knob_add(ks, r, names[i], values[i]);
  knob_add(ks, r, "num_warps", "4");
  knob_add(ks, r, "num_stages", "3");
}

void recipe_knobs_fill(const char *lang, const kevo_define *given, size_t ngiven, const char *src,
                       size_t len, const kevo_recipe *r, recipe_knobs *ks) {
  ks->n = ks->nowned = 0;
  for (size_t i = 0; i < ngiven && ks->n < 128; i++)
    ks->d[ks->n++] = given[i];
  if (!strcmp(lang, "triton")) {
    triton_defaults(src, len, r, ks);
    return;
  }
  const char *p = src, *end = src + len;
  while (p && p < end && ks->n < 128 && ks->nowned + 2 <= 256) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *id, *id2, *v;
    size_t idlen, id2len;
    if (nl && directive(p, nl, "ifndef", &id, &idlen)) {
      const char *next = nl + 1, *next_end = memchr(next, '\n', (size_t)(end - next));
      if (!next_end) next_end = end;
      v = directive(next, next_end, "define", &id2, &id2len);
      if (v && idlen == id2len && !memcmp(id, id2, idlen) && idlen < 128) {
        char name[128];
        memcpy(name, id, idlen);
        name[idlen] = '\0';
        v = skip_ws(v, next_end);
        const char *vend = next_end;
        for (const char *c = v; c + 1 < next_end; c++)
          if (c[0] == '/' && (c[1] == '/' || c[1] == '*')) {
            vend = c;
            break;
          }
        while (vend > v && isspace((unsigned char)vend[-1]))
          vend--;
        if (vend > v && !knob_known(ks, r, name)) {
          char *n = strdup(name), *val = strndup(v, (size_t)(vend - v));
          if (n) ks->owned[ks->nowned++] = n;
          if (val) ks->owned[ks->nowned++] = val;
          if (n && val) ks->d[ks->n++] = (kevo_define){n, val};
        }
      }
    }
    p = nl ? nl + 1 : NULL;
  }
}

void recipe_knobs_free(recipe_knobs *ks) {
  for (size_t i = 0; i < ks->nowned; i++)
    free(ks->owned[i]);
  ks->nowned = 0;
}

void recipe_knobs_declared(const char *lang, const char *src, size_t len, recipe_knobs *ks) {
  kevo_recipe none = {0}; /* no params to leave out */
  ks->n = ks->nowned = 0;
  if (!strcmp(lang, "triton")) {
    char names[EVTRI_MAX_DEFAULTS][64], values[EVTRI_MAX_DEFAULTS][32];
    size_t n = evtri_defaults(src, len, names, values, EVTRI_MAX_DEFAULTS);
    for (size_t i = 0; i < n; i++)
      knob_add(ks, &none, names[i], values[i]);
    return;
  }
  recipe_knobs_fill(lang, NULL, 0, src, len, &none, ks);
}
