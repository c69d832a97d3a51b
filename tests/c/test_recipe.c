/* The recipe loader: the good fixture loads into the right data; every bad fixture fails with
 * its exact file:line:column, key path and reason (tests/recipes/). */
#include "check.h"
#include "recipe.h"

#include <stdlib.h>

static char src[2048];

static const char *fixture(const char *name) {
  static char path[4096];
  snprintf(path, sizeof path, "%s/tests/recipes/%s", src, name);
  return path;
}

static void test_good(void) {
  kevo_recipe *r = NULL;
  kevo_error err = {0};
  CHECK(kevo_recipe_load(fixture("good.yaml"), &r, &err) == KEVO_OK);
  if (!r) {
    fprintf(stderr, "good.yaml: %s\n", err.msg);
    return;
  }
  CHECK(r->version == 1 && !strcmp(r->name, "good"));
  CHECK(r->nparams == 2 && !strcmp(r->params[0].name, "M") && r->params[0].value == 64);
  CHECK(r->nshapes == 3);
  CHECK(!strcmp(r->shapes[0].label, "M=64,N=100"));
  CHECK(!strcmp(r->shapes[1].label, "M=3,N=100")); /* N inherited from params */
  CHECK(!strcmp(r->shapes[2].label, "M=64,N=1"));
  CHECK(r->ntensors == 3);
  CHECK(!strcmp(r->tensors[0].name, "x") && r->tensors[0].role == KEVO_ROLE_INPUT);
  CHECK(r->tensors[0].init.kind == KEVO_INIT_NORMAL && !strcmp(r->tensors[0].init.a, "0") &&
        !strcmp(r->tensors[0].init.b, "2"));
  CHECK(r->tensors[0].line == 9 && r->tensors[0].col == 3);
  CHECK(r->tensors[1].dtype == KEVO_DT_I32 && r->tensors[1].init.kind == KEVO_INIT_RANDINT);
  CHECK(!strcmp(r->tensors[1].init.b, "N"));
  CHECK(!strcmp(r->tensors[2].name, "y") && r->tensors[2].role == KEVO_ROLE_OUTPUT);
  CHECK(r->tensors[2].rank == 2 && !strcmp(r->tensors[2].dims[1], "N"));
  int64_t numel = 0;
  CHECK(kevo_tensor_numel(&r->tensors[2], &r->shapes[1], &numel, &err) == KEVO_OK);
  CHECK(numel == 300);
  kevo_tolerance t = kevo_recipe_tolerance(r, KEVO_DT_F32);
  CHECK(t.atol == 1e-4 && t.rtol == 1e-3);
  t = kevo_recipe_tolerance(r, KEVO_DT_BF16); /* not given: the default */
  CHECK(t.atol == 1e-2 && t.rtol == 1e-2);
  CHECK(!strcmp(r->cost_bytes, "4*(2*M*N + M)") && !strcmp(r->cost_flops, "3*M*N"));
  CHECK_STR_CONTAINS(r->reference.file, "tests/recipes/good/gather.cu");
  CHECK(!r->reference.launch && !r->reference.kernel && r->reference.nknobs == 0);
  CHECK(r->nseeds == 1 && !strcmp(r->seeds[0].kernel, "gather_rows"));
  CHECK(r->seeds[0].launch && r->seeds[0].launch_line == 24);
  CHECK(r->seeds[0].nknobs == 2 && !strcmp(r->seeds[0].knobs[1].name, "FAST"));
  CHECK(r->seeds[0].knobs[0].nvalues == 2 && !strcmp(r->seeds[0].knobs[0].values[1], "128"));
  CHECK(!strcmp(r->seeds[0].knobs[1].values[0], "true"));
  CHECK(!strcmp(r->prompt, "Copy row idx[i] of x into row i of y.\n"));

  char *chunk = NULL;
  const char *where = NULL;
  int line = 0;
  CHECK(kevo_source_launch(r, &r->reference, &chunk, &where, &line, &err) == KEVO_OK);
  CHECK(line == 2 && where == r->reference.file);
  CHECK_STR_CONTAINS(chunk, "name = \"gather_rows\", grid = {M}, block = {128}");
  CHECK(chunk && chunk[0] == '\n' && !strstr(chunk, "*/"));
  free(chunk);
  CHECK(kevo_source_launch(r, &r->seeds[0], &chunk, &where, &line, &err) == KEVO_OK);
  CHECK(line == 24 && where == r->path && !strncmp(chunk, "return {kernels", 15));
  free(chunk);
  kevo_recipe_free(r);
}

struct bad {
  const char *file;
  int status;
  const char *want; /* the exact file:line:column: key.path: reason (after the directory) */
};

static const struct bad bads[] = {
    {"bad_syntax.yaml", KEVO_E_PARSE,
     "bad_syntax.yaml:4:7: YAML syntax error: did not find expected ',' or '}' (while parsing a "
     "flow mapping at line 3)"},
    {"bad_unknown_top.yaml", KEVO_E_RECIPE,
     "bad_unknown_top.yaml:27:1: promt: unknown key (allowed: kevo, name, summary, params,"},
    {"bad_unknown_nested.yaml", KEVO_E_RECIPE,
     "bad_unknown_nested.yaml:12:19: outputs.y.shap: unknown key (allowed: dtype, shape)"},
    {"bad_wrong_type_map.yaml", KEVO_E_RECIPE,
     "bad_wrong_type_map.yaml:11:10: outputs: expected a mapping, got 'y'"},
    {"bad_float_param.yaml", KEVO_E_RECIPE,
     "bad_float_param.yaml:4:20: params.N: expected an integer, got '1.5'"},
    {"bad_tagged_float.yaml", KEVO_E_RECIPE,
     "bad_tagged_float.yaml:4:20: params.N: expected an integer, got !!float 268435456"},
    {"bad_dtype.yaml", KEVO_E_RECIPE,
     "bad_dtype.yaml:12:14: outputs.y.dtype: unknown dtype 'f33' (one of f32, f16, bf16, f64, "
     "i32, i64, u8, i8, bool, f8e4m3, f8e5m2)"},
    {"bad_bool_init.yaml", KEVO_E_RECIPE,
     "bad_bool_init.yaml:7:41: inputs.mask.init: randint(0, 3) does not fit bool (0..2)"},
    {"bad_expr_syntax.yaml", KEVO_E_RECIPE,
     "bad_expr_syntax.yaml:15:15: cost.bytes: '4*(2*M*N + )': column 12: unexpected ')'"},
    {"bad_expr_name.yaml", KEVO_E_RECIPE,
     "bad_expr_name.yaml:9:30: inputs.x.shape[1]: 'K': column 1: unknown name 'K' (params: M, "
     "N)"},
    {"bad_expr_divzero.yaml", KEVO_E_RECIPE,
     "bad_expr_divzero.yaml:15:39: cost.flops: '3*M*N / (N - 1)': column 7: division by zero "
     "(at shape M=64,N=1)"},
    {"bad_dim_nonpositive.yaml", KEVO_E_RECIPE,
     "bad_dim_nonpositive.yaml:12:30: outputs.y.shape[1]: 'N - 1' is 0 (at shape M=64,N=1): a "
     "dimension must be a positive integer"},
    {"bad_missing_key.yaml", KEVO_E_RECIPE,
     "bad_missing_key.yaml:1:1: reference: missing (required)"},
    {"bad_missing_file.yaml", KEVO_E_RECIPE,
     "bad_missing_file.yaml:18:9: reference.file: cannot read '"},
    {"bad_version.yaml", KEVO_E_RECIPE,
     "bad_version.yaml:1:7: kevo: unsupported recipe version 2 (this kevo reads version 1)"},
    {"bad_dup_tensor.yaml", KEVO_E_RECIPE,
     "bad_dup_tensor.yaml:12:3: outputs.x: duplicate tensor name 'x' (first at line 9)"},
    {"bad_shape_param.yaml", KEVO_E_RECIPE,
     "bad_shape_param.yaml:7:6: shapes[1].K: unknown param 'K' (params: M, N)"},
    {"bad_init.yaml", KEVO_E_RECIPE,
     "bad_init.yaml:9:40: inputs.x.init: unknown init 'gaussian' (normal, normal(mean, std), "
     "uniform, uniform(lo, hi), randint(lo, hi))"},
    {"bad_init_args.yaml", KEVO_E_RECIPE,
     "bad_init_args.yaml:9:40: inputs.x.init: uniform(lo, hi): lo (100) must be below hi (0)"},
    {"bad_int_default_init.yaml", KEVO_E_RECIPE,
     "bad_int_default_init.yaml:10:8: inputs.idx.init: missing: i32 tensors need init: "
     "randint(lo, hi)"},
    {"bad_no_launch.yaml", KEVO_E_RECIPE, "bad_no_launch.yaml:18:9: reference.file: '"},
    {"bad_output_init.yaml", KEVO_E_RECIPE,
     "bad_output_init.yaml:12:34: outputs.y.init: outputs have no init"},
    {"bad_dup_key.yaml", KEVO_E_RECIPE,
     "bad_dup_key.yaml:27:1: summary: duplicate key (first at line 3)"},
    {"bad_domain.yaml", KEVO_E_RECIPE,
     "bad_domain.yaml:29:6: domain.N: shape M=64,N=1 is outside the domain [2, 4096]"},
    {"bad_stress.yaml", KEVO_E_RECIPE, "bad_stress.yaml:29:6: stress[0].y: 'y' is not an input"},
    {"bad_knob_empty.yaml", KEVO_E_RECIPE,
     "bad_knob_empty.yaml:26:20: seeds[0].space.BLOCK: an empty list of values"},
};

/* The declared domain wins, the rest is inferred from the shapes; held-out shapes drawn from
 * it stay inside it, are odd where no multiple is asked, and are new. */
static void test_domain(void) {
  kevo_recipe *r = NULL;
  kevo_error err = {0};
  CHECK(kevo_recipe_load(fixture("good.yaml"), &r, &err) == KEVO_OK);
  if (!r) return;
  CHECK(r->domain[0].inferred && r->domain[0].min == 3 && r->domain[0].max == 64);
  CHECK(r->domain[0].multiple == 1);
  CHECK(!r->domain[1].inferred && r->domain[1].min == 1 && r->domain[1].max == 4096);
  CHECK(r->nstress == 1 && r->stress[0].n == 1 && r->stress[0].inits[0].tensor == 0);
  CHECK(r->stress[0].inits[0].init.kind == KEVO_INIT_UNIFORM);
  uint64_t rng = 42;
  int odd = 0, distinct = 0;
  for (int i = 0; i < 50; i++) {
    kevo_shape sh;
    CHECK(kevo_recipe_draw_shape(r, &rng, 4096.0 * 16, i % 2, &sh, &err) == KEVO_OK);
    int64_t m = sh.params[0].value, n = sh.params[1].value;
    CHECK(m >= 3 && m <= 64 && n >= 1 && n <= 4096);
    CHECK(4 * (2 * m * n + m) <= 4096 * 16 + 4 * m * n); /* x, idx and y within the budget */
    odd += m % 2 == 1 && n % 2 == 1 && n % 4 == (i % 2 ? 1 : 3);
    distinct += strcmp(sh.label, r->shapes[0].label) != 0;
    char want[64];
    snprintf(want, sizeof want, "M=%lld,N=%lld", (long long)m, (long long)n);
    CHECK(!strcmp(sh.label, want));
    kevo_shape_free(&sh);
  }
  CHECK(odd == 50 && distinct == 50);
  kevo_recipe_free(r);
  /* every shipped recipe can draw held-out shapes */
  static const char *const names[] = {"softmax", "matmul_bf16", "cross_entropy", "vector_add"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/recipes/%s.yaml", src, names[k]);
    CHECK(kevo_recipe_load(path, &r, &err) == KEVO_OK);
    if (!r) continue;
    CHECK(!r->domain[0].inferred && (r->nstress >= 1 || !strcmp(names[k], "matmul_bf16")));
    kevo_shape sh;
    CHECK(kevo_recipe_draw_shape(r, &rng, 64.0 * (1 << 20), 0, &sh, &err) == KEVO_OK);
    kevo_shape_free(&sh);
    kevo_recipe_free(r);
  }
  /* a held-out variant can put one param in the top half of its domain (a log-uniform draw
   * puts softmax's N over 32768 once in 16), at a random value, within the budget */
  char path[4096];
  snprintf(path, sizeof path, "%s/recipes/softmax.yaml", src);
  CHECK(kevo_recipe_load(path, &r, &err) == KEVO_OK);
  if (!r) return;
  int top_m = 0, top_n = 0, plain_n = 0;
  int64_t first_n = -1, other_n = 0;
  for (int i = 0; i < 60; i++) {
    kevo_shape sh;
    int h = i % 2, top = i % 3; /* 0: log-uniform, 1: M near its top, 2: N */
    CHECK(kevo_recipe_draw_shape(r, &rng, 64.0 * (1 << 20), h + 2 * top, &sh, &err) == KEVO_OK);
    int64_t m = sh.params[0].value, n = sh.params[1].value;
    CHECK(m >= 1 && m <= 16384 && n >= 1 && n <= 65536 && 8.0 * m * n <= 64.0 * (1 << 20));
    CHECK(n % 4 == (h ? 1 : 3) || n < 4);
    top_m += top == 1 && m > 4096; /* M's top half fits the budget only with small rows */
    if (top == 2 && n > 32768) {
      top_n++;
      if (first_n < 0) first_n = n;
      other_n += n != first_n;
    }
    plain_n += top == 0 && n > 32768;
    kevo_shape_free(&sh);
  }
  CHECK(top_m == 20 && top_n == 20 && other_n > 0 && plain_n < 10);
  kevo_recipe_free(r);
  /* vector_add's top (2^28 elements, 3 GiB) does not fit 64 MiB: the top half of the first
   * range whose bottom fits, [2^22, 2^23], the part of it that fits */
  snprintf(path, sizeof path, "%s/recipes/vector_add.yaml", src);
  CHECK(kevo_recipe_load(path, &r, &err) == KEVO_OK);
  if (!r) return;
  for (int i = 0; i < 10; i++) {
    kevo_shape sh;
    CHECK(kevo_recipe_draw_shape(r, &rng, 64.0 * (1 << 20), 3, &sh, &err) == KEVO_OK);
    int64_t n = sh.params[0].value;
    CHECK(n >= (1 << 22) && 12.0 * n <= 64.0 * (1 << 20) && n % 4 == 1);
    kevo_shape_free(&sh);
  }
  kevo_recipe_free(r);
}

static void test_bad(void) {
  for (size_t k = 0; k < sizeof bads / sizeof bads[0]; k++) {
    kevo_recipe *r = (kevo_recipe *)1;
    kevo_error err = {0};
    int rc = kevo_recipe_load(fixture(bads[k].file), &r, &err);
    CHECK(rc == bads[k].status);
    CHECK(r == NULL);
    CHECK_STR_CONTAINS(err.msg, bads[k].want);
    /* the message starts with the path as given */
    CHECK(!strncmp(err.msg, fixture(bads[k].file), strlen(fixture(bads[k].file))));
  }
  kevo_error err = {0};
  kevo_recipe *r = NULL;
  CHECK(kevo_recipe_load(fixture("bad_no_launch.yaml"), &r, &err) == KEVO_E_RECIPE);
  CHECK_STR_CONTAINS(err.msg, "has no kevo:launch block and there is no `reference.launch`");
  CHECK(kevo_recipe_load(fixture("no_such.yaml"), &r, &err) == KEVO_E_IO);
  CHECK_STR_CONTAINS(err.msg, "no_such.yaml");
}

/* The narrow dtypes: names, sizes, integer-ness and their default tolerances (FP8: one unit in
 * the last place), and a recipe that uses each. */
static void test_dtypes(void) {
  static const struct {
    const char *name;
    kevo_dtype dt;
    size_t size;
    int is_int;
  } want[] = {{"i8", KEVO_DT_I8, 1, 1},         {"bool", KEVO_DT_BOOL, 1, 1},
              {"f8e4m3", KEVO_DT_F8E4M3, 1, 0}, {"f8e5m2", KEVO_DT_F8E5M2, 1, 0},
              {"u8", KEVO_DT_U8, 1, 1},         {"bf16", KEVO_DT_BF16, 2, 0}};
  for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
    kevo_dtype dt = KEVO_DT_COUNT;
    CHECK(kevo_dtype_parse(want[k].name, &dt) == KEVO_OK && dt == want[k].dt);
    CHECK(!strcmp(kevo_dtype_name(dt), want[k].name));
    CHECK(kevo_dtype_size(dt) == want[k].size);
    CHECK(kevo_dtype_is_int(dt) == want[k].is_int);
  }
  kevo_tolerance t = kevo_recipe_tolerance(NULL, KEVO_DT_F8E4M3);
  CHECK(t.atol == 0x1p-9 && t.rtol == 0.125);
  t = kevo_recipe_tolerance(NULL, KEVO_DT_F8E5M2);
  CHECK(t.atol == 0x1p-16 && t.rtol == 0.25);
  t = kevo_recipe_tolerance(NULL, KEVO_DT_BOOL);
  CHECK(t.atol == 0 && t.rtol == 0);
  kevo_recipe *r = NULL;
  kevo_error err = {0};
  CHECK(kevo_recipe_load(fixture("dtypes.yaml"), &r, &err) == KEVO_OK);
  if (!r) {
    fprintf(stderr, "dtypes.yaml: %s\n", err.msg);
    return;
  }
  CHECK(r->ntensors == 5 && r->tensors[0].dtype == KEVO_DT_I8 &&
        r->tensors[1].dtype == KEVO_DT_BOOL && r->tensors[2].dtype == KEVO_DT_F8E4M3 &&
        r->tensors[3].dtype == KEVO_DT_F8E5M2);
  t = kevo_recipe_tolerance(r, KEVO_DT_F8E5M2); /* given */
  CHECK(t.atol == 0 && t.rtol == 0.5);
  t = kevo_recipe_tolerance(r, KEVO_DT_F8E4M3); /* the default */
  CHECK(t.atol == 0x1p-9 && t.rtol == 0.125);
  kevo_recipe_free(r);
}

static void test_find(void) {
  char out[4096], env[4200];
  kevo_error err = {0};
  snprintf(env, sizeof env, "/nonexistent:%s/tests/recipes", src);
  setenv("KEVO_RECIPES", env, 1);
  CHECK(kevo_recipe_find("good", out, sizeof out, &err) == KEVO_OK);
  CHECK(!strcmp(out, fixture("good.yaml")));
  CHECK(kevo_recipe_find("softmax", out, sizeof out, &err) == KEVO_OK); /* the source tree's */
  CHECK_STR_CONTAINS(out, "recipes/softmax.yaml");
  CHECK(kevo_recipe_find("no_such_recipe", out, sizeof out, &err) == KEVO_E_IO);
  CHECK_STR_CONTAINS(err.msg, "recipe 'no_such_recipe' not found");
  CHECK_STR_CONTAINS(err.msg, "/nonexistent, ");
  CHECK(kevo_recipe_find("some/dir/x.yaml", out, sizeof out, &err) == KEVO_E_IO);
  CHECK(kevo_recipe_find(fixture("good.yaml"), out, sizeof out, &err) == KEVO_OK);
  char small[8];
  CHECK(kevo_recipe_find("good", small, sizeof small, &err) == KEVO_E_ARG);
  unsetenv("KEVO_RECIPES");
}

static int count_visit(const char *path, const char *name, void *ud) {
  int *n = ud;
  if (!strcmp(name, "softmax") || !strcmp(name, "vector_add")) (*n)++;
  CHECK(strstr(path, name) != NULL);
  return 0;
}

static void test_each(void) {
  int n = 0;
  kevo_error err = {0};
  CHECK(kevo_recipe_each(count_visit, &n, &err) == KEVO_OK);
  CHECK(n == 2); /* the source tree's recipes, once each */
}

static void test_shipped(void) {
  static const char *const names[] = {"softmax.yaml", "vector_add.yaml"};
  for (int k = 0; k < 2; k++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/recipes/%s", src, names[k]);
    kevo_recipe *r = NULL;
    kevo_error err = {0};
    CHECK(kevo_recipe_load(path, &r, &err) == KEVO_OK);
    if (!r) {
      fprintf(stderr, "%s\n", err.msg);
      continue;
    }
    CHECK(r->nshapes == 4 && r->nseeds == 2); /* a CUDA and a Triton seed */
    kevo_recipe_free(r);
  }
}

int main(void) {
  const char *s = getenv("KEVO_SRC");
  if (!s) {
    fprintf(stderr, "KEVO_SRC is not set (run under ctest)\n");
    return 1;
  }
  snprintf(src, sizeof src, "%s", s);
  test_good();
  test_domain();
  test_bad();
  test_dtypes();
  test_find();
  test_each();
  test_shipped();
  CHECK_DONE();
}
