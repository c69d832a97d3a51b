/* recipe_knobs.c: the knobs a candidate's source declares and its launch chunk sees
 * (recipe_knobs.h). */
#include "recipe_knobs.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

enum { TRITON_MAX_DECLARED = 32 };

static int is_ident(int c) {
  return isalnum(c) || c == '_';
}

/* Defaults a Triton source gives its constexprs in the form `NAME: tl.constexpr = <number>`
 * (in any parameter list), so a launch chunk sees the value the kernel compiles with. Returns
 * how many were found (at most max); names and values are copied into the arrays. */
static size_t triton_declared(const char *src, size_t len, char (*names)[64], char (*values)[32],
                              size_t max) {
  static const char pat[] = "tl.constexpr";
  size_t n = 0;
  const char *end = src + len;
  for (const char *p = src; n < max && p + sizeof pat < end; p++) {
    if (memcmp(p, pat, sizeof pat - 1) != 0) continue;
    /* back over ":" and blanks to the parameter's name */
    const char *q = p;
    while (q > src && (q[-1] == ' ' || q[-1] == '\t'))
      q--;
    if (q == src || q[-1] != ':') continue;
    q--;
    while (q > src && (q[-1] == ' ' || q[-1] == '\t'))
      q--;
    const char *ne = q;
    while (q > src && is_ident((unsigned char)q[-1]))
      q--;
    if (ne == q || (size_t)(ne - q) >= 64 || isdigit((unsigned char)*q)) continue;
    /* forward over "= <number>" */
    const char *v = p + sizeof pat - 1;
    while (v < end && (*v == ' ' || *v == '\t'))
      v++;
    if (v >= end || *v != '=') continue;
    v++;
    while (v < end && (*v == ' ' || *v == '\t'))
      v++;
    const char *ve = v;
    while (ve < end && (isalnum((unsigned char)*ve) || *ve == '.' || *ve == '-' || *ve == '+'))
      ve++;
    if (ve == v || (size_t)(ve - v) >= 32 || !(isdigit((unsigned char)*v) || *v == '-')) continue;
    memcpy(names[n], q, (size_t)(ne - q));
    names[n][ne - q] = '\0';
    memcpy(values[n], v, (size_t)(ve - v));
    values[n][ve - v] = '\0';
    n++;
  }
  return n;
}

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
  if (ks->n >= RECIPE_KNOBS_MAX || ks->nowned + 2 > 2 * RECIPE_KNOBS_MAX || knob_known(ks, r, name))
    return;
  char *n = strdup(name), *val = strdup(value);
  if (n) ks->owned[ks->nowned++] = n;
  if (val) ks->owned[ks->nowned++] = val;
  if (n && val) ks->d[ks->n++] = (kevo_define){n, val};
}

/* A Triton source's defaults: `NAME: tl.constexpr = value`, and the compile options'. */
static void triton_defaults(const char *src, size_t len, const kevo_recipe *r, recipe_knobs *ks) {
  char names[TRITON_MAX_DECLARED][64], values[TRITON_MAX_DECLARED][32];
  size_t n = triton_declared(src, len, names, values, TRITON_MAX_DECLARED);
  for (size_t i = 0; i < n; i++)
    knob_add(ks, r, names[i], values[i]);
  knob_add(ks, r, "num_warps", "4");
  knob_add(ks, r, "num_stages", "3");
}

void recipe_knobs_fill(const char *lang, const kevo_define *given, size_t ngiven, const char *src,
                       size_t len, const kevo_recipe *r, recipe_knobs *ks) {
  ks->n = ks->nowned = 0;
  for (size_t i = 0; i < ngiven && ks->n < RECIPE_KNOBS_MAX; i++)
    ks->d[ks->n++] = given[i];
  if (!strcmp(lang, "triton")) {
    triton_defaults(src, len, r, ks);
    return;
  }
  const char *p = src, *end = src + len;
  while (p && p < end && ks->n < RECIPE_KNOBS_MAX && ks->nowned + 2 <= 2 * RECIPE_KNOBS_MAX) {
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
    char names[TRITON_MAX_DECLARED][64], values[TRITON_MAX_DECLARED][32];
    size_t n = triton_declared(src, len, names, values, TRITON_MAX_DECLARED);
    for (size_t i = 0; i < n; i++)
      knob_add(ks, &none, names[i], values[i]);
    return;
  }
  recipe_knobs_fill(lang, NULL, 0, src, len, &none, ks);
}
