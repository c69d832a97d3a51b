/* recipe_domain.c: the domain of a recipe's params (docs/recipes.md "Domain"): inferring a
 * conservative one from the listed shapes, and drawing held-out shapes from it. A candidate is
 * verified on shapes it has never seen, so a kernel right only on the listed sizes fails. */
#include "recipe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

void kevo_recipe_infer_domain(kevo_recipe *r) {
  for (size_t k = 0; r->domain && k < r->nparams; k++) {
    kevo_domain d = {.min = INT64_MAX, .max = 0, .multiple = 0, .inferred = 1};
    for (size_t s = 0; s < r->nshapes; s++) {
      int64_t v = r->shapes[s].params[k].value;
      if (v < d.min) d.min = v;
      if (v > d.max) d.max = v;
      d.multiple = gcd64(d.multiple, v < 0 ? -v : v);
    }
    if (d.min < 1) d.min = 1; /* a param <= 0 (a recipe's own convention): held out as given */
    if (d.multiple < 1) d.multiple = 1;
    if (d.max < d.min) d.max = d.min;
    r->domain[k] = d;
  }
}

static uint64_t next64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double unit(uint64_t *s) {
  return (double)(next64(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* v within domain d, rounded down to a multiple; when the multiple is 1 and the range allows,
 * odd (a multiple of no power-of-two tile) and 3 mod 4 for variant 0, 1 mod 4 for variant 1,
 * so two held-out shapes end rows at different alignments. */
static int64_t aligned(const kevo_domain *d, int64_t v, int variant) {
  if (v > d->max) v = d->max;
  if (v < d->min) v = d->min;
  v -= v % d->multiple;
  if (v < d->min) v += d->multiple;
  if (d->multiple == 1 && v % 2 == 0) v = v + 1 <= d->max ? v + 1 : v - 1 >= d->min ? v - 1 : v;
  int64_t want = variant % 2 == 0 ? 3 : 1;
  if (d->multiple == 1 && v % 4 != want) {
    int64_t up = v - v % 4 + want, down = up - 4;
    if (up <= d->max && up >= d->min)
      v = up;
    else if (down >= d->min && down <= d->max)
      v = down;
  }
  return v;
}

/* A value of domain d, log-uniform over [min, max]. */
static int64_t draw_value(const kevo_domain *d, uint64_t *s, int variant) {
  double lo = log((double)d->min), hi = log((double)d->max + 1);
  return aligned(d, (int64_t)exp(lo + (hi - lo) * unit(s)), variant);
}

/* A value near the top of domain d: uniform over the top half of [min, max >> shrink]. A
 * log-uniform draw seldom reaches the top (a row length over 32768 of a domain to 65536: one
 * draw in 16), where limits a kernel assumes (a row in registers or shared memory, a grid
 * dimension) break; shrink halves the range when the shape would not fit the budget. */
static int64_t draw_top(const kevo_domain *d, uint64_t *s, int variant, int shrink) {
  int64_t hi = d->max >> (shrink < 62 ? shrink : 62), lo = hi / 2;
  if (hi < d->min) hi = d->min;
  if (lo < d->min) lo = d->min;
  return aligned(d, lo + (int64_t)((double)(hi - lo + 1) * unit(s)), variant);
}

static void set_label(kevo_shape *sh) {
  char label[256] = "";
  for (size_t k = 0; k < sh->nparams; k++) {
    size_t used = strlen(label);
    snprintf(label + used, sizeof label - used, "%s%s=%lld", k ? "," : "", sh->params[k].name,
             (long long)sh->params[k].value);
  }
  free(sh->label);
  sh->label = strdup(sh->nparams ? label : "(no params)");
}

static int init_valid(const kevo_init *in, const kevo_shape *sh) {
  double a, b;
  if (!in->a || !in->b) return 1; /* the defaults */
  if (kevo_expr_eval(in->a, sh, &a, NULL) || kevo_expr_eval(in->b, sh, &b, NULL)) return 0;
  return in->kind == KEVO_INIT_NORMAL ? b > 0 : a < b;
}

/* Whether shape sh is one the recipe can be evaluated at: every tensor has elements, every init
 * (stress inits too) has valid bounds. *bytes: what all tensors hold. */
static int shape_valid(const kevo_recipe *r, const kevo_shape *sh, double *bytes) {
  *bytes = 0;
  for (size_t t = 0; t < r->ntensors; t++) {
    int64_t n = 0;
    if (kevo_tensor_numel(&r->tensors[t], sh, &n, NULL) || n <= 0) return 0;
    *bytes += (double)n * (double)kevo_dtype_size(r->tensors[t].dtype);
    if (r->tensors[t].role == KEVO_ROLE_INPUT && !init_valid(&r->tensors[t].init, sh)) return 0;
  }
  for (size_t j = 0; j < r->nstress; j++)
    for (size_t i = 0; i < r->stress[j].n; i++)
      if (!init_valid(&r->stress[j].inits[i].init, sh)) return 0;
  return 1;
}

void kevo_shape_free(kevo_shape *s) {
  if (!s) return;
  free(s->label);
  free(s->params); /* names belong to the recipe */
  memset(s, 0, sizeof *s);
}

int kevo_recipe_draw_shape(const kevo_recipe *r, uint64_t *rng, double max_bytes, int variant,
                           kevo_shape *out, kevo_error *err) {
  memset(out, 0, sizeof *out);
  out->nparams = r->nparams;
  if (r->nparams && !(out->params = calloc(r->nparams, sizeof *out->params)))
    return kevo_fail(err, KEVO_E_NOMEM, "no memory for a shape");
  for (size_t k = 0; k < r->nparams; k++)
    out->params[k] = (kevo_param){r->params[k].name, r->params[k].value};
  double bytes = 0;
  size_t top = (size_t)(variant / 2); /* param top - 1 near the top of its domain */
  if (top > r->nparams || !r->domain) top = 0;
  int shrink = 0; /* the first range whose bottom fits the budget with the others at their min */
  for (; top && shrink < 62; shrink++) {
    for (size_t k = 0; k < r->nparams; k++) {
      const kevo_domain *d = &r->domain[k];
      out->params[k].value = aligned(d, k == top - 1 ? (d->max >> shrink) / 2 : d->min, variant);
    }
    if (shape_valid(r, out, &bytes) && bytes <= max_bytes) break;
  }
  if (shrink == 62) shrink = 0;
  for (int attempt = 0; attempt < 64; attempt++) {
    for (size_t k = 0; r->domain && k < r->nparams; k++)
      out->params[k].value = draw_value(&r->domain[k], rng, variant);
    if (top)
      out->params[top - 1].value =
          draw_top(&r->domain[top - 1], rng, variant, shrink + attempt / 8);
    if (shape_valid(r, out, &bytes) && bytes <= max_bytes) goto found;
  }
  /* too large every time: halve the largest param (within its domain) until it fits */
  for (int step = 0; step < 256; step++) {
    if (shape_valid(r, out, &bytes) && bytes <= max_bytes) goto found;
    size_t big = 0;
    double best = 0;
    for (size_t k = 0; r->domain && k < r->nparams; k++) {
      const kevo_domain *d = &r->domain[k];
      int64_t half = out->params[k].value / 2;
      half -= half % d->multiple;
      if (half >= d->min && (double)out->params[k].value > best) {
        best = (double)out->params[k].value;
        big = k;
      }
    }
    if (best == 0) break;
    int64_t half = out->params[big].value / 2;
    out->params[big].value = half - half % r->domain[big].multiple;
  }
  kevo_shape_free(out);
  return kevo_fail(err, KEVO_E_RECIPE,
                   "%s: no shape in the domain has valid tensors and inits within %.0f bytes",
                   r->path, max_bytes);
found:
  set_label(out);
  if (!out->label) {
    kevo_shape_free(out);
    return kevo_fail(err, KEVO_E_NOMEM, "no memory for a shape");
  }
  return KEVO_OK;
}
