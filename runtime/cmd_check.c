/* kevo check RECIPE...: loads and checks recipes and prints what each one describes. */
#include "evaluate.h"
#include "luastate.h"
#include "recipe.h"
#include "registry.h"

#include <lua.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void human_bytes(double b, char *out, size_t n) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    u++;
  }
  snprintf(out, n, u ? "%.1f %s" : "%.0f %s", b, units[u]);
}

static void human_count(double v, const char *unit, char *out, size_t n) {
  static const char *const prefixes[] = {"", "K", "M", "G", "T", "P"};
  int p = 0;
  while (v >= 1000 && p < 5) {
    v /= 1000;
    p++;
  }
  snprintf(out, n, p ? "%.3g %s%s" : "%.0f %s%s", v, prefixes[p], unit);
}

/* Compiles (does not run) a launch chunk in a sandbox, so a Lua syntax error is caught now and
 * reported at its line in the file it lives in. Returns 0 when it compiles. */
static int check_launch_syntax(const kevo_recipe *r, const kevo_source *s, const char *what,
                               char *where_line, size_t n) {
  char *chunk = NULL;
  const char *where = NULL;
  int line = 0;
  kevo_error err = {0};
  if (kevo_source_launch(r, s, &chunk, &where, &line, &err)) {
    fprintf(stderr, "kevo check: %s: %s\n", what, err.msg);
    return 1;
  }
  snprintf(where_line, n, "%s:%d", where, line);
  kevo_lua_opts opts = {.sandbox = 1, .mem_limit = 16 << 20, .instr_limit = 1000000};
  lua_State *L = kevo_lua_new(&opts, &err);
  int bad = 0;
  if (!L) {
    fprintf(stderr, "kevo check: %s\n", err.msg);
    bad = 1;
  } else {
    /* blank lines in front make Lua's line numbers the file's own */
    size_t pad = line > 1 ? (size_t)line - 1 : 0, len = strlen(chunk);
    char *padded = malloc(pad + len + 1);
    char name[1100];
    snprintf(name, sizeof name, "@%s", where);
    if (!padded) {
      bad = 1;
    } else {
      memset(padded, '\n', pad);
      memcpy(padded + pad, chunk, len + 1);
      if (kevo_lua_load(L, padded, pad + len, name) != LUA_OK) {
        /* Lua says "file:line: message": keep its place, put the key path after it */
        const char *msg = lua_tostring(L, -1), *rest = msg;
        size_t wl = strlen(where);
        if (!strncmp(msg, where, wl) && msg[wl] == ':' && (rest = strstr(msg + wl + 1, ": ")))
          fprintf(stderr, "%.*s: %s.launch: %s\n", (int)(rest - msg), msg, what, rest + 2);
        else
          fprintf(stderr, "%s: %s.launch: %s\n", where, what, msg);
        bad = 1;
      }
      free(padded);
    }
    kevo_lua_close(L);
  }
  free(chunk);
  return bad;
}

static void print_source(const kevo_recipe *r, const kevo_source *s, const char *label,
                         const char *where_line) {
  printf("  %-10s %s %s", label, s->lang, s->file);
  if (s->kernel) printf(" (kernel %s)", s->kernel);
  printf(", launch at %s\n", where_line);
  if (!s->nknobs) return;
  double points = 1;
  printf("  %-10s", "");
  for (size_t k = 0; k < s->nknobs; k++) {
    points *= (double)s->knobs[k].nvalues;
    printf(" %s%s {", k ? "x " : "", s->knobs[k].name);
    for (size_t j = 0; j < s->knobs[k].nvalues; j++)
      printf("%s%s", j ? ", " : "", s->knobs[k].values[j]);
    printf("}");
  }
  printf(" = %.0f point%s\n", points, points == 1 ? "" : "s");
}

/* The domain held-out shapes are drawn from, and the stress trials. */
static void print_domain(const kevo_recipe *r) {
  int inferred = 0;
  printf("  %-10s", "domain");
  for (size_t k = 0; r->domain && k < r->nparams; k++) {
    const kevo_domain *d = &r->domain[k];
    printf("%s %s in [%lld, %lld]", k ? "," : "", r->params[k].name, (long long)d->min,
           (long long)d->max);
    if (d->multiple > 1) printf(" multiple of %lld", (long long)d->multiple);
    if (d->inferred) printf("*"), inferred = 1;
  }
  if (!r->nparams) printf(" none (no params)");
  printf("%s\n", inferred ? "  (* inferred from the shapes: declare `domain:` to widen it)" : "");
  static const char *const kinds[] = {"normal", "uniform", "randint"};
  for (size_t j = 0; j < r->nstress; j++) {
    printf("  %-10s", j ? "" : "stress");
    for (size_t i = 0; i < r->stress[j].n; i++) {
      const kevo_stress_init *si = &r->stress[j].inits[i];
      printf("%s %s %s", i ? "," : "", r->tensors[si->tensor].name, kinds[si->init.kind]);
      if (si->init.a) printf("(%s, %s)", si->init.a, si->init.b);
    }
    printf("\n");
  }
  if (!r->nstress) printf("  %-10s none (declare `stress:` inits)\n", "stress");
}

static void print_summary(const kevo_recipe *r) {
  char a[64], b[64];
  printf("%s  %s\n", r->name, r->path);
  if (r->summary) printf("  %s\n", r->summary);
  printf("  %-10s %zu:", "shapes", r->nshapes);
  for (size_t s = 0; s < r->nshapes; s++)
    printf(" %s%s", r->shapes[s].label, s == 0 ? " (benchmark)" : "");
  printf("\n");
  print_domain(r);
  for (size_t k = 0; k < r->ntensors; k++) {
    const kevo_tensor *t = &r->tensors[k];
    int64_t numel = 0;
    kevo_tensor_numel(t, &r->shapes[0], &numel, NULL);
    printf("  %-6s %-3s %s [", t->role == KEVO_ROLE_INPUT ? "input" : "output", t->name,
           kevo_dtype_name(t->dtype));
    for (size_t d = 0; d < t->rank; d++) {
      double v = 0;
      kevo_expr_eval(t->dims[d], &r->shapes[0], &v, NULL);
      char lit[32]; /* a literal dim is shown once: "3", not "3=3" */
      snprintf(lit, sizeof lit, "%.0f", v);
      if (!strcmp(lit, t->dims[d]))
        printf("%s%s", d ? ", " : "", lit);
      else
        printf("%s%s=%s", d ? ", " : "", t->dims[d], lit);
    }
    human_bytes((double)numel * (double)kevo_dtype_size(t->dtype), a, sizeof a);
    printf("] %lld elements, %s", (long long)numel, a);
    if (t->role == KEVO_ROLE_INPUT) {
      static const char *const kinds[] = {"normal", "uniform", "randint"};
      printf(", init %s", kinds[t->init.kind]);
      if (t->init.a) printf("(%s, %s)", t->init.a, t->init.b);
    }
    printf("\n");
  }
  for (size_t k = 0; k < r->ntensors; k++) {
    int seen = 0;
    for (size_t j = 0; j < k; j++)
      seen |= r->tensors[j].dtype == r->tensors[k].dtype;
    if (seen) continue;
    kevo_tolerance tol = kevo_recipe_tolerance(r, r->tensors[k].dtype);
    printf("  %-10s %s atol %g rtol %g\n", "tolerance", kevo_dtype_name(tol.dtype), tol.atol,
           tol.rtol);
  }
  double bytes = 0, flops = 0;
  if (r->cost_bytes) kevo_expr_eval(r->cost_bytes, &r->shapes[0], &bytes, NULL);
  if (r->cost_flops) kevo_expr_eval(r->cost_flops, &r->shapes[0], &flops, NULL);
  human_count(bytes, "B", a, sizeof a);
  human_count(flops, "FLOP", b, sizeof b);
  if (r->cost_bytes || r->cost_flops) { /* only what the recipe gives: no "flops ? = ?" */
    printf("  %-10s", "cost");
    if (r->cost_bytes) printf(" bytes %s = %s%s", r->cost_bytes, a, r->cost_flops ? "," : "");
    if (r->cost_flops) printf(" flops %s = %s", r->cost_flops, b);
    printf(" (benchmark shape)\n");
  } else
    printf("  %-10s none (no roofline and no speed floor for this recipe)\n", "cost");
}

/* Checks one recipe; prints its summary (unless quiet) or its error. Returns 0 when good. */
static int check_one(const char *arg, int quiet) {
  char path[4096];
  kevo_error err = {0};
  kevo_recipe *r = NULL;
  if (kevo_recipe_find(arg, path, sizeof path, &err) || kevo_recipe_load(path, &r, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  char ref_at[1200], seed_at[64][1200];
  int bad = 0;
  if (!strcmp(r->reference.lang, "torch")) /* a PyTorch module: the bridge runs it, no launch */
    snprintf(ref_at, sizeof ref_at, "none (the PyTorch bridge computes it)");
  else
    bad = check_launch_syntax(r, &r->reference, "reference", ref_at, sizeof ref_at);
  for (size_t k = 0; k < r->nseeds && k < 64; k++) {
    char what[32];
    snprintf(what, sizeof what, "seeds[%zu]", k);
    bad |= check_launch_syntax(r, &r->seeds[k], what, seed_at[k], sizeof seed_at[k]);
  }
  /* every value of every knob makes a launch (no BLOCK=0): the chunks run without a GPU */
  evaluator *ev = NULL;
  if (!bad && evaluator_new(r, NULL, NULL, &ev, &err) == KEVO_OK) {
    for (size_t k = 0; k < r->nseeds && !bad; k++)
      if (evaluator_check_space(ev, k, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        bad = 1;
      }
  }
  if (!bad && !quiet) {
    print_summary(r);
    print_source(r, &r->reference, "reference", ref_at);
    for (size_t k = 0; k < r->nseeds && k < 64; k++) {
      char label[32];
      snprintf(label, sizeof label, "seed %zu", k + 1); /* numbered as ctx.seeds and the logs */
      print_source(r, &r->seeds[k], label, seed_at[k]);
    }
    if (r->prompt) printf("  %-10s %zu characters\n", "prompt", strlen(r->prompt));
  }
  if (ev)
    evaluator_free(ev); /* it owns r */
  else
    kevo_recipe_free(r);
  return bad;
}

static int check_main(int argc, char **argv) {
  int quiet = 0, nrecipes = 0, failed = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
      quiet = 1;
    } else if (argv[i][0] == '-' && strcmp(argv[i], "--")) {
      fprintf(stderr, "kevo check: unknown option '%s' (see kevo check --help)\n", argv[i]);
      return KEVO_EXIT_USAGE;
    }
  }
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-') continue;
    if (nrecipes++ && !quiet) printf("\n");
    failed += check_one(argv[i], quiet);
  }
  if (!nrecipes) {
    fprintf(stderr, "usage: kevo check [-q] RECIPE... (see kevo check --help)\n");
    return KEVO_EXIT_USAGE;
  }
  if (failed && nrecipes > 1)
    fprintf(stderr, "kevo check: %d of %d recipes failed\n", failed, nrecipes);
  return failed ? KEVO_EXIT_USAGE : KEVO_EXIT_OK;
}

const struct kevo_command kevo_cmd_check = {
    "check", "load and check recipes, and say what each describes",
    "usage: kevo check [-q|--quiet] RECIPE...\n\n"
    "Loads each recipe (a path to a .yaml file, or a name found on the recipe search path:\n"
    "$KEVO_RECIPES, ./recipes, the source tree's recipes/) and checks everything that can be\n"
    "checked without a GPU: the schema (unknown keys are errors), dtypes, that every shape,\n"
    "cost and init expression evaluates on every shape, that source files exist, that each\n"
    "launch chunk compiles as Lua, and that every value of every seed's knobs makes a launch\n"
    "on every shape (no BLOCK=0). Prints the shapes, the params' domain (declared, or inferred\n"
    "from the shapes and marked *), the stress trials, tensors (sizes and bytes at the\n"
    "benchmark shape), tolerances, cost, reference and seeds with the size of their knob\n"
    "space.\n\n"
    "An error is printed as file:line:column: key.path: what is wrong.\n"
    "  -q, --quiet   print only errors\n\n"
    "exit: 0 all recipes are good, 2 one or more is not (or bad usage)\n"
    "See docs/recipes.md for the format.\n",
    check_main, 0};
