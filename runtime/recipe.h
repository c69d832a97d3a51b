/* recipe.h: operator recipes (YAML, see docs/recipes.md), loaded into plain C data.
 * Loading checks everything it can: unknown keys, types, dtypes, that every expression
 * parses and evaluates on every shape, that files exist. Every error names
 * file:line:column and the key path ("recipe.yaml:12:5: inputs.x.dtype: unknown dtype 'f33'"). */
#ifndef KEVO_RECIPE_H
#define KEVO_RECIPE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

typedef enum kevo_dtype {
  KEVO_DT_F32,
  KEVO_DT_F16,
  KEVO_DT_BF16,
  KEVO_DT_F64,
  KEVO_DT_I32,
  KEVO_DT_I64,
  KEVO_DT_U8,
  KEVO_DT_I8,
  KEVO_DT_BOOL,   /* one byte, 0 or 1 */
  KEVO_DT_F8E4M3, /* OCP FP8 E4M3 ("fn": no infinities, NaN 0x7F/0xFF, max 448) */
  KEVO_DT_F8E5M2, /* OCP FP8 E5M2 (IEEE-like: the top byte of an f16) */
  KEVO_DT_COUNT
} kevo_dtype;
/* The dtype names, as error messages list them (recipe_data.c's table in the same order). */
#define KEVO_DTYPE_NAMES "f32, f16, bf16, f64, i32, i64, u8, i8, bool, f8e4m3, f8e5m2"

const char *kevo_dtype_name(kevo_dtype dt);              /* "f32" */
size_t kevo_dtype_size(kevo_dtype dt);                   /* bytes per element */
int kevo_dtype_parse(const char *name, kevo_dtype *out); /* KEVO_OK or KEVO_E_PARSE */

/* One named integer parameter (M = 16384). */
typedef struct kevo_param {
  char *name;
  int64_t value;
} kevo_param;

/* A full assignment of the recipe's params: the benchmark shape or an extra shape
 * (an extra shape's missing keys take the benchmark value). */
typedef struct kevo_shape {
  char *label; /* "M=127,N=1000" */
  size_t nparams;
  kevo_param *params; /* same order as recipe->params */
} kevo_shape;

typedef enum kevo_role { KEVO_ROLE_INPUT, KEVO_ROLE_OUTPUT } kevo_role;

/* How an input is filled for a trial: values drawn from a seeded generator. */
typedef enum kevo_init_kind {
  KEVO_INIT_NORMAL,  /* mean a, standard deviation b (default 0, 1) */
  KEVO_INIT_UNIFORM, /* [a, b) (default -1, 1) */
  KEVO_INIT_RANDINT, /* integers in [a, b): a, b are expressions over params */
} kevo_init_kind;

typedef struct kevo_init {
  kevo_init_kind kind;
  char *a, *b; /* expressions as written, or NULL for the default */
} kevo_init;

typedef struct kevo_tensor {
  char *name;
  kevo_role role;
  kevo_dtype dtype;
  size_t rank;
  char **dims;    /* one expression per dimension, over params */
  kevo_init init; /* inputs only */
  int line, col;  /* where it is declared, for later errors */
} kevo_tensor;

typedef struct kevo_tolerance {
  kevo_dtype dtype;
  double atol, rtol;
} kevo_tolerance;

/* One knob of a seed's search space: its name and its values as written ("256", "true"). */
typedef struct kevo_knob {
  char *name;
  size_t nvalues;
  char **values;
} kevo_knob;

/* A kernel source: the reference or a seed. */
typedef struct kevo_source {
  char *lang;   /* "cuda" | "triton" */
  char *file;   /* path as resolved (relative to the recipe's directory) */
  char *kernel; /* entry kernel name, when the launch chunk does not say (optional) */
  char *launch; /* the launch chunk (Lua), or NULL: then it is in the source's kevo:launch block */
  int launch_line; /* line in the recipe where the launch chunk starts (for Lua errors) */
  size_t nknobs;
  kevo_knob *knobs; /* the seed's space: defines for CUDA, constexprs/num_warps for Triton */
} kevo_source;

/* The values a param may take (docs/recipes.md "Domain"): min <= v <= max, v % multiple == 0.
 * Declared in the recipe's `domain:` or inferred from its shapes (`inferred` set). */
typedef struct kevo_domain {
  int64_t min, max, multiple;
  int inferred;
} kevo_domain;

/* One stress trial: inits that replace the normal ones for the inputs it names. */
typedef struct kevo_stress_init {
  size_t tensor; /* index into recipe->tensors (an input) */
  kevo_init init;
} kevo_stress_init;

typedef struct kevo_stress {
  size_t n;
  kevo_stress_init *inits;
} kevo_stress;

typedef struct kevo_recipe {
  char *path;  /* the YAML file as given */
  char *dir;   /* its directory: sources resolve against it */
  int version; /* the `kevo:` key; 1 */
  char *name;
  char *summary;
  size_t nparams;
  kevo_param *params; /* the benchmark shape's values, in file order */
  size_t nshapes;
  kevo_shape *shapes; /* shapes[0] is the benchmark shape; then the extra shapes */
  size_t ntensors;
  kevo_tensor *tensors; /* inputs first (file order), then outputs */
  size_t ntolerances;
  kevo_tolerance *tolerances;
  char *cost_bytes; /* expressions over params, or NULL */
  char *cost_flops;
  kevo_source reference;
  size_t nseeds;
  kevo_source *seeds;
  char *prompt;        /* hints for the model, or NULL */
  kevo_domain *domain; /* one per param (same order), declared or inferred; NULL without params */
  size_t nstress;
  kevo_stress *stress; /* the `stress:` trials, in file order */
} kevo_recipe;

/* Loads and checks a recipe. On failure *out is NULL and err names file:line:column and key:
 * KEVO_E_IO (cannot read), KEVO_E_PARSE (YAML syntax), KEVO_E_RECIPE (schema or meaning). */
int kevo_recipe_load(const char *path, kevo_recipe **out, kevo_error *err);
void kevo_recipe_free(kevo_recipe *r);

/* The tolerance for a dtype (defaults when the recipe gives none: f32 1e-5/1e-5,
 * f16 1e-3/1e-3, bf16 1e-2/1e-2, f64 1e-12/1e-12, one unit in the last place for the FP8
 * types (f8e4m3 atol 2^-9 rtol 0.125, f8e5m2 atol 2^-16 rtol 0.25), integers and bool exact). */
/* Whether a dtype holds integers (compared exactly, drawn with randint): i32 i64 u8 i8 bool. */
int kevo_dtype_is_int(kevo_dtype dt);
kevo_tolerance kevo_recipe_tolerance(const kevo_recipe *r, kevo_dtype dt);

/* The launch chunk of source s (of recipe r): the recipe's `launch:` text, or else the
 * kevo:launch block of the source file (a C comment, a Python triple-quoted string or
 * # comment lines; see docs/architecture.md "Launch chunks"). *chunk is malloc'ed (the caller
 * frees it); *where is the file it comes from (r->path or s->file) and *line the line there of
 * its first line, so a Lua error at chunk line n is at *where:(*line + n - 1).
 * KEVO_E_RECIPE when there is none, KEVO_E_IO when the source cannot be read. */
int kevo_source_launch(const kevo_recipe *r, const kevo_source *s, char **chunk, const char **where,
                       int *line, kevo_error *err);

/* Evaluates an expression over a shape's params: integers, + - * / % (C semantics on
 * integers, / is exact on floats), ** , parentheses, unary minus, min(a,b), max(a,b),
 * cdiv(a,b). Nothing else: no names but params. KEVO_E_PARSE names the column. */
int kevo_expr_eval(const char *expr, const kevo_shape *shape, double *out, kevo_error *err);

/* Like kevo_expr_eval, but keeps integers exact: *is_int says whether the result is an integer
 * (then *iout holds it exactly, else 0); *dout holds it as a double. Any pointer may be NULL. */
int kevo_expr_eval_exact(const char *expr, const kevo_shape *shape, int64_t *iout, int *is_int,
                         double *dout, kevo_error *err);

/* Element count of tensor t at a shape (product of its dims). */
int kevo_tensor_numel(const kevo_tensor *t, const kevo_shape *shape, int64_t *out, kevo_error *err);

/* Fills r->domain (allocated, one per param) with the conservative domain its shapes imply:
 * [smallest, largest value listed], multiple = the gcd of the values listed (1 when they share
 * no factor). Called by the loader before a declared `domain:` overrides it. */
void kevo_recipe_infer_domain(kevo_recipe *r);

/* Draws a shape from the recipe's domain with the generator state *rng (splitmix64), for the
 * held-out shapes of an evaluation: each param log-uniform in its range, a multiple of its
 * `multiple`, odd where the multiple is 1 (so no power-of-two tile divides it; 3 mod 4 for an
 * even variant, 1 mod 4 for an odd one, where the range allows), redrawn until
 * every tensor has at least one element, every init is valid and the shape moves at most
 * max_bytes over all tensors (halving the largest param as a last resort). variant / 2 = k + 1
 * puts param k (of the recipe's) in the top half of its domain instead (the range halved
 * while the shape does not fit). out->params and out->label are malloc'ed (kevo_shape_free).
 * KEVO_E_RECIPE when no valid shape is found. */
int kevo_recipe_draw_shape(const kevo_recipe *r, uint64_t *rng, double max_bytes, int variant,
                           kevo_shape *out, kevo_error *err);
void kevo_shape_free(kevo_shape *s);

/* Resolves a recipe argument to a file path in out. A path (it has a '/', ends in .yaml/.yml, or
 * names an existing file) is taken as it is; a bare name like "softmax" is looked up as
 * <dir>/softmax.yaml along the search path: $KEVO_RECIPES (colon-separated), ./recipes, then the
 * source tree's recipes/ (dev builds). KEVO_E_IO naming the places looked in when not found. */
int kevo_recipe_find(const char *name_or_path, char *out, size_t outlen, kevo_error *err);

/* Calls fn(path, name, ud) for every <dir>/<name>.yaml on the search path, in search order,
 * sorted by name within a directory; a name seen in an earlier directory hides later ones.
 * Stops early and returns fn's status when it returns nonzero. */
typedef int (*kevo_recipe_visit)(const char *path, const char *name, void *ud);
int kevo_recipe_each(kevo_recipe_visit fn, void *ud, kevo_error *err);

#endif
