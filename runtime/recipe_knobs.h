/* recipe_knobs.h: the knobs a candidate's source declares for itself, and the knobs its launch
 * chunk sees (recipe_knobs.c). Knows nothing of Lua or of the evaluator. */
#ifndef KEVO_RECIPE_KNOBS_H
#define KEVO_RECIPE_KNOBS_H

#include <stddef.h>

#include "cuda_compile.h"
#include "recipe.h"

enum { RECIPE_KNOBS_MAX = 128 };

/* The knobs a launch chunk sees: those given, then the defaults the source gives itself (CUDA:
 * `#ifndef NAME` directly followed by `#define NAME value`, docs/recipes.md; Triton:
 * `NAME: tl.constexpr = value`, and num_warps 4 / num_stages 3), so a kernel compiled with its
 * own defaults is launched with the same values. Names that are recipe params are skipped. */
typedef struct recipe_knobs {
  kevo_define d[RECIPE_KNOBS_MAX];
  char *owned[2 * RECIPE_KNOBS_MAX];
  size_t n, nowned;
} recipe_knobs;

void recipe_knobs_fill(const char *lang, const kevo_define *given, size_t ngiven, const char *src,
                       size_t len, const kevo_recipe *r, recipe_knobs *ks);
void recipe_knobs_free(recipe_knobs *ks);

/* Only the defaults the source declares itself (no num_warps / num_stages fallback). */
void recipe_knobs_declared(const char *lang, const char *src, size_t len, recipe_knobs *ks);

#endif
