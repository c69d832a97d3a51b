/* recipe.c: loading and checking recipes (recipe.h, docs/recipes.md) with libyaml's document
 * API. The loader walks the YAML tree against a fixed schema: every mapping's keys are checked
 * against the keys allowed there, every scalar against the type wanted there, and every error
 * carries the file:line:column of the node at fault and its key path. Expressions are evaluated
 * on every shape as they are read, so a recipe that loads has no latent arithmetic errors. */
#include "recipe.h"

#include "buf.h"

#include <yaml.h>

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { RECIPE_MAX_BYTES = 1 << 20, RECIPE_MAX_DEPTH = 64, PATH_LEN = 256 };

/* ---- the loader's context and its error helpers ---- */

typedef struct loader {
  const char *file; /* the path as given: error messages start with it */
  yaml_document_t doc;
  kevo_recipe *r;
  kevo_error *err;
} loader;

static yaml_node_t *node(loader *ld, int idx) {
  return yaml_document_get_node(&ld->doc, idx);
}

/* Fails with "file:line:col: path: message" at node n (libyaml marks are 0-based). */
__attribute__((format(printf, 5, 6))) static int
fail_at(loader *ld, int status, const yaml_node_t *n, const char *path, const char *fmt, ...) {
  char what[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return kevo_fail(ld->err, status, "%s:%zu:%zu: %s: %s", ld->file, n->start_mark.line + 1,
                   n->start_mark.column + 1, path, what);
}

#define FAIL(ld, n, path, ...) fail_at(ld, KEVO_E_RECIPE, n, path, __VA_ARGS__)

static int nomem(loader *ld) {
  return kevo_fail(ld->err, KEVO_E_NOMEM, "%s: out of memory", ld->file);
}

static void join_key(char *out, const char *path, const char *key) {
  snprintf(out, PATH_LEN, "%s%s%s", path, *path ? "." : "", key);
}

static void join_index(char *out, const char *path, size_t i) {
  snprintf(out, PATH_LEN, "%s[%zu]", path, i);
}

static int is_null(const yaml_node_t *n) {
  if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
  const char *v = (const char *)n->data.scalar.value;
  return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

static const char *describe(const yaml_node_t *n) {
  if (n->type == YAML_MAPPING_NODE) return "a mapping";
  if (n->type == YAML_SEQUENCE_NODE) return "a list";
  if (is_null(n)) return "nothing";
  return "a scalar";
}

static const char *scalar(const yaml_node_t *n) {
  return (const char *)n->data.scalar.value;
}

static int expect_type(loader *ld, const yaml_node_t *n, const char *path, yaml_node_type_t t) {
  if (n->type == t && !is_null(n)) return KEVO_OK;
  const char *want = t == YAML_MAPPING_NODE    ? "a mapping"
                     : t == YAML_SEQUENCE_NODE ? "a list"
                                               : "a value";
  if (n->type == YAML_SCALAR_NODE && !is_null(n))
    return FAIL(ld, n, path, "expected %s, got '%s'", want, scalar(n));
  return FAIL(ld, n, path, "expected %s, got %s", want, describe(n));
}

static int is_identifier(const char *s) {
  if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_') return 0;
  return 1;
}

/* Checks that every key of mapping n is a plain string, appears once, and is in allowed. */
static int check_keys(loader *ld, const yaml_node_t *n, const char *path,
                      const char *const allowed[]) {
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = node(ld, p->key);
    if (k->type != YAML_SCALAR_NODE || is_null(k))
      return FAIL(ld, k, *path ? path : "recipe", "keys must be names, got %s", describe(k));
    char kp[PATH_LEN];
    join_key(kp, path, scalar(k));
    for (yaml_node_pair_t *q = n->data.mapping.pairs.start; q < p; q++)
      if (!strcmp(scalar(node(ld, q->key)), scalar(k)))
        return FAIL(ld, k, kp, "duplicate key (first at line %zu)",
                    node(ld, q->key)->start_mark.line + 1);
    if (!allowed) continue;
    int ok = 0;
    for (const char *const *a = allowed; *a && !ok; a++)
      ok = !strcmp(*a, scalar(k));
    if (!ok) {
      char list[512] = "";
      for (const char *const *a = allowed; *a; a++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s", a == allowed ? "" : ", ", *a);
      }
      return FAIL(ld, k, kp, "unknown key (allowed: %s)", list);
    }
  }
  return KEVO_OK;
}

/* The key node of key in mapping n, or NULL. */
static yaml_node_t *key_of(loader *ld, const yaml_node_t *n, const char *key) {
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++)
    if (node(ld, p->key)->type == YAML_SCALAR_NODE && !strcmp(scalar(node(ld, p->key)), key))
      return node(ld, p->key);
  return NULL;
}

/* The value of key in mapping n, or NULL. */
static yaml_node_t *lookup(loader *ld, const yaml_node_t *n, const char *key) {
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++)
    if (node(ld, p->key)->type == YAML_SCALAR_NODE && !strcmp(scalar(node(ld, p->key)), key))
      return node(ld, p->value);
  return NULL;
}

static int require_key(loader *ld, const yaml_node_t *n, const char *path, const char *key,
                       yaml_node_t **out) {
  *out = lookup(ld, n, key);
  if (*out) return KEVO_OK;
  char kp[PATH_LEN];
  join_key(kp, path, key);
  return FAIL(ld, n, kp, "missing (required)");
}

/* A string value (any scalar but null), copied into *out. */
static int get_string(loader *ld, const yaml_node_t *n, const char *path, char **out) {
  if (n->type != YAML_SCALAR_NODE || is_null(n))
    return FAIL(ld, n, path, "expected a string, got %s", describe(n));
  if (!(*out = strdup(scalar(n)))) return nomem(ld);
  return KEVO_OK;
}

/* Is a scalar written with an explicit YAML tag other than those in `allowed` (a "|"-list of
 * core tags: "int|float")? Then shown gets the tag as written ("!!float", "!mine") and 1 is
 * returned. Untagged scalars carry libyaml's default str tag and pass. */
static int foreign_tag(const yaml_node_t *n, const char *allowed, char *shown, size_t len) {
  static const char core[] = "tag:yaml.org,2002:";
  const char *tag = (const char *)n->tag;
  if (!tag || !strcmp(tag, YAML_STR_TAG)) return 0;
  if (strncmp(tag, core, sizeof core - 1)) {
    snprintf(shown, len, "%s", tag); /* a local tag, "!mine" */
    return 1;
  }
  tag += sizeof core - 1;
  size_t tlen = strlen(tag);
  for (const char *a = allowed; *a;) {
    size_t alen = strcspn(a, "|");
    if (alen == tlen && !strncmp(a, tag, tlen)) return 0;
    a += alen + (a[alen] == '|');
  }
  snprintf(shown, len, "!!%s", tag);
  return 1;
}

/* An integer written plainly (digits, optional sign, '_' between digits), untagged or !!int. */
static int get_int(loader *ld, const yaml_node_t *n, const char *path, int64_t *out) {
  if (n->type != YAML_SCALAR_NODE || is_null(n))
    return FAIL(ld, n, path, "expected an integer, got %s", describe(n));
  const char *s = scalar(n);
  char tag[64];
  if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
    return FAIL(ld, n, path, "expected an integer, got the string \"%s\"", s);
  if (foreign_tag(n, "int", tag, sizeof tag))
    return FAIL(ld, n, path, "expected an integer, got %s %s", tag, s);
  const char *q = s;
  int neg = *q == '-';
  if (*q == '-' || *q == '+') q++;
  int64_t v = 0;
  int digits = 0;
  for (; *q; q++) {
    if (*q == '_' && digits && isdigit((unsigned char)q[1])) continue;
    if (!isdigit((unsigned char)*q)) break;
    digits++;
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *q - '0', &v))
      return FAIL(ld, n, path, "integer '%s' is too large", s);
  }
  if (!digits || *q) return FAIL(ld, n, path, "expected an integer, got '%s'", s);
  *out = neg ? -v : v;
  return KEVO_OK;
}

static int get_number(loader *ld, const yaml_node_t *n, const char *path, double *out) {
  if (n->type != YAML_SCALAR_NODE || is_null(n) || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
    return FAIL(ld, n, path, "expected a number, got %s",
                n->type == YAML_SCALAR_NODE && !is_null(n) ? "a string" : describe(n));
  char tag[64];
  if (foreign_tag(n, "int|float", tag, sizeof tag))
    return FAIL(ld, n, path, "expected a number, got %s %s", tag, scalar(n));
  char *end;
  errno = 0;
  *out = strtod(scalar(n), &end);
  if (end == scalar(n) || *end || errno || !isfinite(*out))
    return FAIL(ld, n, path, "expected a number, got '%s'", scalar(n));
  return KEVO_OK;
}

/* ---- expressions, checked on every shape ---- */

enum expr_want { WANT_DIM, WANT_COUNT, WANT_NUMBER, WANT_INT };

/* Evaluates expr (from node n) on every shape and checks the result is what `want` says.
 * A failure on an extra shape names it. */
static int check_expr(loader *ld, const yaml_node_t *n, const char *path, const char *expr,
                      enum expr_want want) {
  for (size_t s = 0; s < ld->r->nshapes; s++) {
    const kevo_shape *sh = &ld->r->shapes[s];
    kevo_error e = {0};
    int64_t iv;
    int is_int;
    double dv;
    char at[320] = "";
    if (s > 0) snprintf(at, sizeof at, " (at shape %s)", sh->label);
    if (kevo_expr_eval_exact(expr, sh, &iv, &is_int, &dv, &e))
      return FAIL(ld, n, path, "%s%s", e.msg, at);
    if (want == WANT_DIM && (!is_int || iv <= 0))
      return FAIL(ld, n, path, "'%s' is %g%s: a dimension must be a positive integer", expr, dv,
                  at);
    if (want == WANT_INT && !is_int)
      return FAIL(ld, n, path, "'%s' is %g%s: an integer is needed", expr, dv, at);
    if (want == WANT_COUNT && dv < 0)
      return FAIL(ld, n, path, "'%s' is %g%s: must not be negative", expr, dv, at);
  }
  return KEVO_OK;
}

/* An expression value: a scalar (number or string), copied into *out and checked. */
static int get_expr(loader *ld, const yaml_node_t *n, const char *path, enum expr_want want,
                    char **out) {
  if (n->type != YAML_SCALAR_NODE || is_null(n))
    return FAIL(ld, n, path, "expected an expression, got %s", describe(n));
  int rc = check_expr(ld, n, path, scalar(n), want);
  if (rc) return rc;
  if (!(*out = strdup(scalar(n)))) return nomem(ld);
  return KEVO_OK;
}

/* ---- params and shapes ---- */

static int shape_label(loader *ld, kevo_shape *sh) {
  char label[256] = "";
  for (size_t k = 0; k < sh->nparams; k++) {
    size_t used = strlen(label);
    snprintf(label + used, sizeof label - used, "%s%s=%lld", k ? "," : "", sh->params[k].name,
             (long long)sh->params[k].value);
  }
  if (!(sh->label = strdup(sh->nparams ? label : "(no params)"))) return nomem(ld);
  return KEVO_OK;
}

static int shape_init(loader *ld, kevo_shape *sh) {
  kevo_recipe *r = ld->r;
  sh->nparams = r->nparams;
  if (r->nparams && !(sh->params = calloc(r->nparams, sizeof *sh->params))) return nomem(ld);
  for (size_t k = 0; k < r->nparams; k++)
    sh->params[k] = (kevo_param){r->params[k].name, r->params[k].value}; /* names shared */
  return KEVO_OK;
}

static int load_params(loader *ld, const yaml_node_t *top) {
  kevo_recipe *r = ld->r;
  yaml_node_t *n = lookup(ld, top, "params");
  if (n) {
    int rc = expect_type(ld, n, "params", YAML_MAPPING_NODE);
    if (!rc) rc = check_keys(ld, n, "params", NULL);
    if (rc) return rc;
    size_t count = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    if (count && !(r->params = calloc(count, sizeof *r->params))) return nomem(ld);
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
      yaml_node_t *k = node(ld, p->key);
      char kp[PATH_LEN];
      join_key(kp, "params", scalar(k));
      if (!is_identifier(scalar(k)) || !strcmp(scalar(k), "min") || !strcmp(scalar(k), "max") ||
          !strcmp(scalar(k), "cdiv"))
        return FAIL(ld, k, kp, "a param name must be an identifier other than min, max, cdiv");
      kevo_param *prm = &r->params[r->nparams];
      if ((rc = get_int(ld, node(ld, p->value), kp, &prm->value))) return rc;
      if (!(prm->name = strdup(scalar(k)))) return nomem(ld);
      r->nparams++;
    }
  }
  /* shapes[0] is the benchmark shape: the params themselves */
  yaml_node_t *list = lookup(ld, top, "shapes");
  size_t extra = 0;
  if (list) {
    int rc = expect_type(ld, list, "shapes", YAML_SEQUENCE_NODE);
    if (rc) return rc;
    extra = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
  }
  if (!(r->shapes = calloc(1 + extra, sizeof *r->shapes))) return nomem(ld);
  int rc = shape_init(ld, &r->shapes[0]);
  if (!rc) rc = shape_label(ld, &r->shapes[0]);
  if (rc) return rc;
  r->nshapes = 1;
  for (size_t i = 0; i < extra; i++) {
    yaml_node_t *sn = node(ld, list->data.sequence.items.start[i]);
    char sp[PATH_LEN];
    join_index(sp, "shapes", i);
    kevo_shape *sh = &r->shapes[r->nshapes];
    if ((rc = expect_type(ld, sn, sp, YAML_MAPPING_NODE))) return rc;
    if ((rc = check_keys(ld, sn, sp, NULL))) return rc;
    if ((rc = shape_init(ld, sh))) return rc;
    r->nshapes++;
    for (yaml_node_pair_t *p = sn->data.mapping.pairs.start; p < sn->data.mapping.pairs.top; p++) {
      yaml_node_t *k = node(ld, p->key);
      char kp[PATH_LEN];
      join_key(kp, sp, scalar(k));
      size_t at = 0;
      while (at < r->nparams && strcmp(r->params[at].name, scalar(k)))
        at++;
      if (at == r->nparams) {
        char names[256] = "";
        for (size_t j = 0; j < r->nparams; j++) {
          size_t used = strlen(names);
          snprintf(names + used, sizeof names - used, "%s%s", j ? ", " : "", r->params[j].name);
        }
        return FAIL(ld, k, kp, "unknown param '%s' (params: %s)", scalar(k),
                    r->nparams ? names : "none");
      }
      if ((rc = get_int(ld, node(ld, p->value), kp, &sh->params[at].value))) return rc;
    }
    if ((rc = shape_label(ld, sh))) return rc;
    for (size_t j = 0; j + 1 < r->nshapes; j++)
      if (!strcmp(r->shapes[j].label, sh->label))
        return FAIL(ld, sn, sp, "same shape as %s (%s)", j ? "an earlier one" : "the params",
                    sh->label);
  }
  return KEVO_OK;
}

/* ---- tensors ---- */

/* A copy of [from, to) without its leading and trailing blanks. */
static char *strndup_trim(const char *from, const char *to) {
  while (from < to && isspace((unsigned char)*from))
    from++;
  while (to > from && isspace((unsigned char)to[-1]))
    to--;
  return strndup(from, (size_t)(to - from));
}

/* init: normal | normal(mean, std) | uniform | uniform(lo, hi) | randint(lo, hi). */
static int load_init(loader *ld, const yaml_node_t *n, const char *path, kevo_tensor *t) {
  if (n->type != YAML_SCALAR_NODE || is_null(n))
    return FAIL(ld, n, path, "expected normal, uniform or randint(lo, hi), got %s", describe(n));
  const char *s = scalar(n);
  const char *open = strchr(s, '(');
  size_t name_len = open ? (size_t)(open - s) : strlen(s);
  while (name_len && isspace((unsigned char)s[name_len - 1]))
    name_len--;
  static const char *const kinds[] = {"normal", "uniform", "randint"};
  int kind = -1;
  for (int k = 0; k < 3; k++)
    if (strlen(kinds[k]) == name_len && !strncmp(s, kinds[k], name_len)) kind = k;
  if (kind < 0)
    return FAIL(ld, n, path,
                "unknown init '%s' (normal, normal(mean, std), uniform, "
                "uniform(lo, hi), randint(lo, hi))",
                s);
  t->init.kind = (kevo_init_kind)kind;
  if (!open) {
    if (kind == KEVO_INIT_RANDINT)
      return FAIL(ld, n, path, "randint needs bounds: randint(lo, hi)");
  } else {
    /* split "(a, b)" at the comma outside parentheses */
    size_t len = strlen(open);
    if (open[len - 1] != ')') return FAIL(ld, n, path, "'%s': expected ')' at the end", s);
    int depth = 0;
    const char *comma = NULL;
    for (const char *q = open + 1; q < open + len - 1; q++) {
      if (*q == '(') depth++;
      if (*q == ')') depth--;
      if (*q == ',' && depth == 0) {
        if (comma) return FAIL(ld, n, path, "'%s': takes two arguments", s);
        comma = q;
      }
    }
    if (!comma) return FAIL(ld, n, path, "'%s': takes two arguments", s);
    t->init.a = strndup_trim(open + 1, comma);
    t->init.b = strndup_trim(comma + 1, open + len - 1);
    if (!t->init.a || !t->init.b) return nomem(ld);
    enum expr_want want = kind == KEVO_INIT_RANDINT ? WANT_INT : WANT_NUMBER;
    int rc = check_expr(ld, n, path, t->init.a, want);
    if (!rc) rc = check_expr(ld, n, path, t->init.b, want);
    if (rc) return rc;
    for (size_t sidx = 0; sidx < ld->r->nshapes; sidx++) {
      double a, b;
      kevo_expr_eval(t->init.a, &ld->r->shapes[sidx], &a, NULL);
      kevo_expr_eval(t->init.b, &ld->r->shapes[sidx], &b, NULL);
      if (kind == KEVO_INIT_NORMAL && !(b > 0))
        return FAIL(ld, n, path, "normal(mean, std): std is %g, must be positive", b);
      if (kind != KEVO_INIT_NORMAL && !(a < b))
        return FAIL(ld, n, path, "%s(lo, hi): lo (%g) must be below hi (%g)", kinds[kind], a, b);
      if (kind == KEVO_INIT_RANDINT && t->dtype == KEVO_DT_U8 && (a < 0 || b > 256))
        return FAIL(ld, n, path, "randint(%g, %g) does not fit u8 (0..256)", a, b);
      if (kind == KEVO_INIT_RANDINT && t->dtype == KEVO_DT_I8 && (a < -128 || b > 128))
        return FAIL(ld, n, path, "randint(%g, %g) does not fit i8 (-128..128)", a, b);
      if (kind == KEVO_INIT_RANDINT && t->dtype == KEVO_DT_BOOL && (a < 0 || b > 2))
        return FAIL(ld, n, path, "randint(%g, %g) does not fit bool (0..2)", a, b);
      if (kind == KEVO_INIT_RANDINT && t->dtype == KEVO_DT_I32 &&
          (a < -2147483648.0 || b > 2147483648.0))
        return FAIL(ld, n, path, "randint(%g, %g) does not fit i32", a, b);
    }
  }
  if (kevo_dtype_is_int(t->dtype) && kind != KEVO_INIT_RANDINT)
    return FAIL(ld, n, path, "%s tensors need init: randint(lo, hi)", kevo_dtype_name(t->dtype));
  return KEVO_OK;
}

static int load_tensor(loader *ld, yaml_node_t *key, yaml_node_t *n, const char *path,
                       kevo_role role, kevo_tensor *t) {
  static const char *const in_keys[] = {"dtype", "shape", "init", NULL};
  static const char *const out_keys[] = {"dtype", "shape", NULL};
  t->role = role;
  t->line = (int)key->start_mark.line + 1;
  t->col = (int)key->start_mark.column + 1;
  if (!(t->name = strdup(scalar(key)))) return nomem(ld);
  if (!is_identifier(t->name)) return FAIL(ld, key, path, "a tensor name must be a C identifier");
  for (size_t k = 0; k < ld->r->ntensors; k++)
    if (!strcmp(ld->r->tensors[k].name, t->name))
      return FAIL(ld, key, path, "duplicate tensor name '%s' (first at line %d)", t->name,
                  ld->r->tensors[k].line);
  int rc = expect_type(ld, n, path, YAML_MAPPING_NODE);
  char kp[PATH_LEN];
  yaml_node_t *init_key = rc ? NULL : key_of(ld, n, "init");
  join_key(kp, path, "init");
  if (role == KEVO_ROLE_OUTPUT && init_key)
    return FAIL(ld, init_key, kp, "outputs have no init (they are poisoned, then written)");
  if (!rc) rc = check_keys(ld, n, path, role == KEVO_ROLE_INPUT ? in_keys : out_keys);
  if (rc) return rc;
  yaml_node_t *v;
  join_key(kp, path, "dtype");
  if ((rc = require_key(ld, n, path, "dtype", &v))) return rc;
  if (v->type != YAML_SCALAR_NODE || is_null(v))
    return FAIL(ld, v, kp, "expected a dtype (" KEVO_DTYPE_NAMES "), got %s", describe(v));
  if (kevo_dtype_parse(scalar(v), &t->dtype))
    return FAIL(ld, v, kp, "unknown dtype '%s' (one of " KEVO_DTYPE_NAMES ")", scalar(v));
  join_key(kp, path, "shape");
  if ((rc = require_key(ld, n, path, "shape", &v))) return rc;
  if (v->type == YAML_SCALAR_NODE && !is_null(v))
    return FAIL(ld, v, kp, "expected a list of dimensions like [M, N], got '%s'", scalar(v));
  if ((rc = expect_type(ld, v, kp, YAML_SEQUENCE_NODE))) return rc;
  size_t rank = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
  if (rank > 8) return FAIL(ld, v, kp, "rank %zu: at most 8 dimensions", rank);
  if (rank && !(t->dims = calloc(rank, sizeof *t->dims))) return nomem(ld);
  for (size_t d = 0; d < rank; d++) {
    char dp[PATH_LEN];
    join_index(dp, kp, d);
    yaml_node_t *dn = node(ld, v->data.sequence.items.start[d]);
    if ((rc = get_expr(ld, dn, dp, WANT_DIM, &t->dims[d]))) return rc;
    t->rank++;
  }
  for (size_t s = 0; s < ld->r->nshapes; s++) {
    int64_t numel;
    kevo_error e = {0};
    if (kevo_tensor_numel(t, &ld->r->shapes[s], &numel, &e))
      return FAIL(ld, v, kp, "%s (at shape %s)", e.msg, ld->r->shapes[s].label);
  }
  t->init.kind = KEVO_INIT_NORMAL;
  join_key(kp, path, "init");
  if (role == KEVO_ROLE_INPUT && (v = lookup(ld, n, "init"))) return load_init(ld, v, kp, t);
  if (role == KEVO_ROLE_INPUT && kevo_dtype_is_int(t->dtype))
    return FAIL(ld, n, kp, "missing: %s tensors need init: randint(lo, hi)",
                kevo_dtype_name(t->dtype));
  return KEVO_OK;
}

static int load_tensors(loader *ld, const yaml_node_t *top, const char *key, kevo_role role) {
  yaml_node_t *n;
  int rc = require_key(ld, top, "", key, &n);
  if (!rc) rc = expect_type(ld, n, key, YAML_MAPPING_NODE);
  if (!rc) rc = check_keys(ld, n, key, NULL);
  if (rc) return rc;
  size_t count = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
  kevo_tensor *grown = realloc(ld->r->tensors, (ld->r->ntensors + count) * sizeof *grown);
  if (!grown) return nomem(ld);
  ld->r->tensors = grown;
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = node(ld, p->key);
    char tp[PATH_LEN];
    join_key(tp, key, scalar(k));
    kevo_tensor *t = &ld->r->tensors[ld->r->ntensors];
    memset(t, 0, sizeof *t);
    rc = load_tensor(ld, k, node(ld, p->value), tp, role, t);
    ld->r->ntensors++; /* counted even on failure, so kevo_recipe_free frees it */
    if (rc) return rc;
  }
  return KEVO_OK;
}

/* ---- tolerance, cost, sources ---- */

static int load_tolerance(loader *ld, const yaml_node_t *top) {
  yaml_node_t *n = lookup(ld, top, "tolerance");
  if (!n) return KEVO_OK;
  int rc = expect_type(ld, n, "tolerance", YAML_MAPPING_NODE);
  if (!rc) rc = check_keys(ld, n, "tolerance", NULL);
  if (rc) return rc;
  size_t count = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
  if (count && !(ld->r->tolerances = calloc(count, sizeof *ld->r->tolerances))) return nomem(ld);
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = node(ld, p->key), *v = node(ld, p->value);
    char tp[PATH_LEN], kp[PATH_LEN];
    join_key(tp, "tolerance", scalar(k));
    kevo_tolerance *tol = &ld->r->tolerances[ld->r->ntolerances];
    if (kevo_dtype_parse(scalar(k), &tol->dtype))
      return FAIL(ld, k, tp, "unknown dtype '%s' (one of " KEVO_DTYPE_NAMES ")", scalar(k));
    *tol = kevo_recipe_tolerance(NULL, tol->dtype);
    if ((rc = expect_type(ld, v, tp, YAML_MAPPING_NODE))) return rc;
    if ((rc = check_keys(ld, v, tp, (const char *const[]){"atol", "rtol", NULL}))) return rc;
    static const char *const names[] = {"atol", "rtol"};
    for (int j = 0; j < 2; j++) {
      yaml_node_t *x = lookup(ld, v, names[j]);
      double *dst = j ? &tol->rtol : &tol->atol;
      join_key(kp, tp, names[j]);
      if (!x) continue;
      if ((rc = get_number(ld, x, kp, dst))) return rc;
      if (*dst < 0 || *dst >= 1) return FAIL(ld, x, kp, "%g: must be in [0, 1)", *dst);
    }
    ld->r->ntolerances++;
  }
  return KEVO_OK;
}

static int load_cost(loader *ld, const yaml_node_t *top) {
  yaml_node_t *n = lookup(ld, top, "cost"), *v;
  if (!n) return KEVO_OK;
  int rc = expect_type(ld, n, "cost", YAML_MAPPING_NODE);
  if (!rc) rc = check_keys(ld, n, "cost", (const char *const[]){"bytes", "flops", NULL});
  if (rc) return rc;
  if ((v = lookup(ld, n, "bytes")) &&
      (rc = get_expr(ld, v, "cost.bytes", WANT_COUNT, &ld->r->cost_bytes)))
    return rc;
  if ((v = lookup(ld, n, "flops")) &&
      (rc = get_expr(ld, v, "cost.flops", WANT_COUNT, &ld->r->cost_flops)))
    return rc;
  return KEVO_OK;
}

static int load_space(loader *ld, const yaml_node_t *n, const char *path, kevo_source *src) {
  int rc = expect_type(ld, n, path, YAML_MAPPING_NODE);
  if (!rc) rc = check_keys(ld, n, path, NULL);
  if (rc) return rc;
  size_t count = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
  if (count && !(src->knobs = calloc(count, sizeof *src->knobs))) return nomem(ld);
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = node(ld, p->key), *v = node(ld, p->value);
    char kp[PATH_LEN];
    join_key(kp, path, scalar(k));
    kevo_knob *knob = &src->knobs[src->nknobs++];
    if (!(knob->name = strdup(scalar(k)))) return nomem(ld);
    if (!is_identifier(knob->name)) return FAIL(ld, k, kp, "a knob name must be an identifier");
    if ((rc = expect_type(ld, v, kp, YAML_SEQUENCE_NODE))) return rc;
    size_t nv = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
    if (!nv) return FAIL(ld, v, kp, "an empty list of values");
    if (!(knob->values = calloc(nv, sizeof *knob->values))) return nomem(ld);
    for (size_t i = 0; i < nv; i++) {
      yaml_node_t *x = node(ld, v->data.sequence.items.start[i]);
      char ip[PATH_LEN];
      join_index(ip, kp, i);
      if (x->type != YAML_SCALAR_NODE || is_null(x))
        return FAIL(ld, x, ip, "a knob value must be a number or a word, got %s", describe(x));
      for (size_t j = 0; j < knob->nvalues; j++)
        if (!strcmp(knob->values[j], scalar(x)))
          return FAIL(ld, x, ip, "value '%s' is listed twice", scalar(x));
      if ((rc = get_string(ld, x, ip, &knob->values[i]))) return rc;
      knob->nvalues++;
    }
  }
  return KEVO_OK;
}

static int load_source(loader *ld, const yaml_node_t *n, const char *path, int is_seed,
                       kevo_source *src) {
  static const char *const ref_keys[] = {"lang", "file", "kernel", "launch", NULL};
  static const char *const seed_keys[] = {"lang", "file", "kernel", "launch", "space", NULL};
  int rc = expect_type(ld, n, path, YAML_MAPPING_NODE);
  if (!rc) rc = check_keys(ld, n, path, is_seed ? seed_keys : ref_keys);
  if (rc) return rc;
  char kp[PATH_LEN];
  yaml_node_t *v;
  join_key(kp, path, "lang");
  if ((rc = require_key(ld, n, path, "lang", &v)) || (rc = get_string(ld, v, kp, &src->lang)))
    return rc;
  /* a reference may also be a PyTorch module (a KernelBench problem, docs/kbench.md): the
   * PyTorch bridge computes its outputs, so it has no launch chunk */
  int torch = !is_seed && !strcmp(src->lang, "torch");
  if (strcmp(src->lang, "cuda") && strcmp(src->lang, "triton") && !torch)
    return FAIL(ld, v, kp, "unknown lang '%s' (cuda or triton%s)", src->lang,
                is_seed ? "" : "; torch for a KernelBench problem");
  join_key(kp, path, "file");
  char *file = NULL;
  if ((rc = require_key(ld, n, path, "file", &v)) || (rc = get_string(ld, v, kp, &file))) return rc;
  yaml_node_t *file_node = v;
  size_t need = strlen(ld->r->dir) + strlen(file) + 2;
  src->file = malloc(need);
  if (!src->file) {
    free(file);
    return nomem(ld);
  }
  if (file[0] == '/')
    snprintf(src->file, need, "%s", file);
  else
    snprintf(src->file, need, "%s/%s", ld->r->dir, file);
  free(file);
  kevo_error ferr = {0};
  struct stat st;
  if (stat(src->file, &st) != 0 && errno != ELOOP)
    return FAIL(ld, v, kp, "cannot read '%s': %s", src->file, strerror(errno));
  if (kevo_regular_file(src->file, &ferr)) return FAIL(ld, v, kp, "%s", ferr.msg);
  join_key(kp, path, "kernel");
  if ((v = lookup(ld, n, "kernel"))) {
    if ((rc = get_string(ld, v, kp, &src->kernel))) return rc;
    if (!is_identifier(src->kernel)) return FAIL(ld, v, kp, "a kernel name must be an identifier");
  }
  join_key(kp, path, "launch");
  if ((v = lookup(ld, n, "launch"))) {
    if ((rc = get_string(ld, v, kp, &src->launch))) return rc;
    int block = v->data.scalar.style == YAML_LITERAL_SCALAR_STYLE ||
                v->data.scalar.style == YAML_FOLDED_SCALAR_STYLE;
    src->launch_line = (int)v->start_mark.line + 1 + block; /* a block starts on the next line */
  }
  join_key(kp, path, "space");
  if ((v = lookup(ld, n, "space")) && (rc = load_space(ld, v, kp, src))) return rc;
  if (!src->launch && !torch) { /* then the source must carry its own kevo:launch block */
    char *chunk;
    const char *where;
    int line;
    kevo_error e = {0};
    rc = kevo_source_launch(ld->r, src, &chunk, &where, &line, &e);
    free(chunk);
    join_key(kp, path, "file");
    if (rc == KEVO_E_RECIPE)
      return FAIL(ld, file_node, kp, "'%s' has no kevo:launch block and there is no `%s.launch`",
                  src->file, path);
    if (rc) return FAIL(ld, file_node, kp, "%s", e.msg);
  }
  return KEVO_OK;
}

static int load_sources(loader *ld, const yaml_node_t *top) {
  yaml_node_t *n;
  int rc = require_key(ld, top, "", "reference", &n);
  if (!rc) rc = load_source(ld, n, "reference", 0, &ld->r->reference);
  if (rc || !(n = lookup(ld, top, "seeds"))) return rc;
  if ((rc = expect_type(ld, n, "seeds", YAML_SEQUENCE_NODE))) return rc;
  size_t count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
  if (count && !(ld->r->seeds = calloc(count, sizeof *ld->r->seeds))) return nomem(ld);
  for (size_t i = 0; i < count; i++) {
    char sp[PATH_LEN];
    join_index(sp, "seeds", i);
    ld->r->nseeds++;
    if ((rc = load_source(ld, node(ld, n->data.sequence.items.start[i]), sp, 1, &ld->r->seeds[i])))
      return rc;
  }
  return KEVO_OK;
}

/* ---- domain and stress ---- */

/* domain: {PARAM: {min:, max:, multiple:}}: the values each param may take. Every listed shape
 * must lie in it; params it leaves out get the inferred domain (recipe_domain.c). */
static int load_domain(loader *ld, const yaml_node_t *top) {
  kevo_recipe *r = ld->r;
  if (r->nparams && !(r->domain = calloc(r->nparams, sizeof *r->domain))) return nomem(ld);
  kevo_recipe_infer_domain(r);
  yaml_node_t *n = lookup(ld, top, "domain");
  if (!n) return KEVO_OK;
  int rc = expect_type(ld, n, "domain", YAML_MAPPING_NODE);
  if (!rc) rc = check_keys(ld, n, "domain", NULL);
  if (rc) return rc;
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = node(ld, p->key), *v = node(ld, p->value);
    char kp[PATH_LEN], fp[PATH_LEN];
    join_key(kp, "domain", scalar(k));
    size_t at = 0;
    while (at < r->nparams && strcmp(r->params[at].name, scalar(k)))
      at++;
    if (at == r->nparams) return FAIL(ld, k, kp, "unknown param '%s'", scalar(k));
    if ((rc = expect_type(ld, v, kp, YAML_MAPPING_NODE))) return rc;
    if ((rc = check_keys(ld, v, kp, (const char *const[]){"min", "max", "multiple", NULL})))
      return rc;
    kevo_domain d = {.min = 1, .max = r->params[at].value, .multiple = 1};
    static const char *const names[] = {"min", "max", "multiple"};
    int64_t *dst[] = {&d.min, &d.max, &d.multiple};
    for (int j = 0; j < 3; j++) {
      yaml_node_t *x = lookup(ld, v, names[j]);
      join_key(fp, kp, names[j]);
      if (x && (rc = get_int(ld, x, fp, dst[j]))) return rc;
    }
    if (d.min < 1) return FAIL(ld, v, kp, "min is %lld: params are at least 1", (long long)d.min);
    if (d.max < d.min)
      return FAIL(ld, v, kp, "max (%lld) is below min (%lld)", (long long)d.max, (long long)d.min);
    if (d.multiple < 1 || d.multiple > d.max)
      return FAIL(ld, v, kp, "multiple is %lld: must be in [1, max]", (long long)d.multiple);
    for (size_t s = 0; s < r->nshapes; s++) {
      int64_t x = r->shapes[s].params[at].value;
      if (x < d.min || x > d.max || x % d.multiple)
        return FAIL(ld, v, kp, "shape %s is outside the domain [%lld, %lld]%s%.0lld",
                    r->shapes[s].label, (long long)d.min, (long long)d.max,
                    d.multiple > 1 ? ", multiple of " : "",
                    d.multiple > 1 ? (long long)d.multiple : 0LL);
    }
    r->domain[at] = d;
  }
  return KEVO_OK;
}

/* stress: [{INPUT: init, ...}, ...]: one trial each, with these inits for the inputs named. */
static int load_stress(loader *ld, const yaml_node_t *top) {
  kevo_recipe *r = ld->r;
  yaml_node_t *n = lookup(ld, top, "stress");
  if (!n) return KEVO_OK;
  int rc = expect_type(ld, n, "stress", YAML_SEQUENCE_NODE);
  if (rc) return rc;
  size_t count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
  if (count > 4) return FAIL(ld, n, "stress", "%zu trials: at most 4", count);
  if (count && !(r->stress = calloc(count, sizeof *r->stress))) return nomem(ld);
  for (size_t i = 0; i < count; i++) {
    yaml_node_t *m = node(ld, n->data.sequence.items.start[i]);
    char sp[PATH_LEN];
    join_index(sp, "stress", i);
    kevo_stress *st = &r->stress[r->nstress++];
    if ((rc = expect_type(ld, m, sp, YAML_MAPPING_NODE))) return rc;
    if ((rc = check_keys(ld, m, sp, NULL))) return rc;
    size_t k = (size_t)(m->data.mapping.pairs.top - m->data.mapping.pairs.start);
    if (!(st->inits = calloc(k, sizeof *st->inits))) return nomem(ld);
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
      yaml_node_t *key = node(ld, p->key);
      char kp[PATH_LEN];
      join_key(kp, sp, scalar(key));
      size_t t = 0;
      while (t < r->ntensors && strcmp(r->tensors[t].name, scalar(key)))
        t++;
      if (t == r->ntensors || r->tensors[t].role != KEVO_ROLE_INPUT)
        return FAIL(ld, key, kp, "'%s' is not an input", scalar(key));
      kevo_tensor tmp = {.dtype = r->tensors[t].dtype};
      rc = load_init(ld, node(ld, p->value), kp, &tmp);
      st->inits[st->n++] = (kevo_stress_init){t, tmp.init};
      if (rc) return rc;
    }
  }
  return KEVO_OK;
}

/* ---- the whole recipe ---- */

static int load_top(loader *ld, yaml_node_t *top) {
  static const char *const keys[] = {"kevo",   "name",    "summary",   "params", "shapes",
                                     "inputs", "outputs", "tolerance", "cost",   "reference",
                                     "seeds",  "prompt",  "domain",    "stress", NULL};
  kevo_recipe *r = ld->r;
  int rc = expect_type(ld, top, "recipe", YAML_MAPPING_NODE);
  if (!rc) rc = check_keys(ld, top, "", keys);
  if (rc) return rc;
  yaml_node_t *v = lookup(ld, top, "kevo");
  if (!v) return FAIL(ld, top, "kevo", "missing: a recipe starts with the version key `kevo: 1`");
  int64_t version;
  if ((rc = get_int(ld, v, "kevo", &version))) return rc;
  if (version != 1)
    return FAIL(ld, v, "kevo", "unsupported recipe version %lld (this kevo reads version 1)",
                (long long)version);
  r->version = 1;
  if ((rc = require_key(ld, top, "", "name", &v)) || (rc = get_string(ld, v, "name", &r->name)))
    return rc;
  for (const char *q = r->name; *q; q++)
    if (!isalnum((unsigned char)*q) && !strchr("_-.", *q))
      return FAIL(ld, v, "name", "'%s': use letters, digits, '_', '-' and '.'", r->name);
  if ((v = lookup(ld, top, "summary")) && (rc = get_string(ld, v, "summary", &r->summary)))
    return rc;
  if ((v = lookup(ld, top, "prompt")) && (rc = get_string(ld, v, "prompt", &r->prompt))) return rc;
  if ((rc = load_params(ld, top))) return rc;
  if ((rc = load_tensors(ld, top, "inputs", KEVO_ROLE_INPUT))) return rc;
  size_t ninputs = r->ntensors;
  if (!ninputs) return FAIL(ld, lookup(ld, top, "inputs"), "inputs", "at least one input");
  if ((rc = load_tensors(ld, top, "outputs", KEVO_ROLE_OUTPUT))) return rc;
  if (r->ntensors == ninputs)
    return FAIL(ld, lookup(ld, top, "outputs"), "outputs", "at least one output");
  if ((rc = load_tolerance(ld, top))) return rc;
  if ((rc = load_cost(ld, top))) return rc;
  if ((rc = load_domain(ld, top)) || (rc = load_stress(ld, top))) return rc;
  return load_sources(ld, top);
}

static int yaml_failure(loader *ld, const yaml_parser_t *p) {
  const yaml_mark_t *m = &p->problem_mark;
  char ctx[256] = "";
  if (p->context)
    snprintf(ctx, sizeof ctx, " (%s at line %zu)", p->context, p->context_mark.line + 1);
  return kevo_fail(ld->err, KEVO_E_PARSE, "%s:%zu:%zu: YAML syntax error: %s%s", ld->file,
                   m->line + 1, m->column + 1, p->problem ? p->problem : "malformed", ctx);
}

/* Refuses YAML nested deeper than RECIPE_MAX_DEPTH collections, at the collection that goes
 * past it, before the document is built. libyaml's scanner keeps one pending simple key per
 * open flow collection and walks them all at every token, so `[[[[...` costs depth x length
 * (80,000 levels took seconds); events stop at the 65th level, having scanned ~1 KiB past it.
 * A syntax error stops this pass quietly: the document load reports it. */
static int yaml_depth_check(loader *ld, const char *text, size_t len) {
  yaml_parser_t p;
  yaml_event_t ev;
  int depth = 0, rc = KEVO_OK, done = 0;
  yaml_parser_initialize(&p);
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  while (!done && !rc && yaml_parser_parse(&p, &ev)) {
    if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
      if (++depth > RECIPE_MAX_DEPTH)
        rc =
            kevo_fail(ld->err, KEVO_E_PARSE, "%s:%zu:%zu: YAML nested deeper than %d levels",
                      ld->file, ev.start_mark.line + 1, ev.start_mark.column + 1, RECIPE_MAX_DEPTH);
    } else if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
      depth--;
    }
    done = ev.type == YAML_STREAM_END_EVENT;
    yaml_event_delete(&ev);
  }
  yaml_parser_delete(&p);
  return rc;
}

static int dir_of(const char *path, char **out) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    *out = strdup(".");
  else if (slash == path)
    *out = strdup("/");
  else
    *out = strndup(path, (size_t)(slash - path));
  return *out ? KEVO_OK : KEVO_E_NOMEM;
}

int kevo_recipe_load(const char *path, kevo_recipe **out, kevo_error *err) {
  *out = NULL;
  if (!path) return kevo_fail(err, KEVO_E_ARG, "kevo_recipe_load: no path");
  kevo_buf text;
  kevo_buf_init(&text, RECIPE_MAX_BYTES);
  int rc = kevo_read_file(path, &text, err);
  if (rc) {
    if (rc == KEVO_E_NOMEM) rc = kevo_fail(err, KEVO_E_IO, "%s: larger than 1 MiB", path);
    kevo_buf_free(&text);
    return rc;
  }
  loader ld = {.file = path, .err = err};
  ld.r = calloc(1, sizeof *ld.r);
  if (!ld.r || !(ld.r->path = strdup(path)) || dir_of(path, &ld.r->dir)) {
    kevo_recipe_free(ld.r);
    kevo_buf_free(&text);
    return nomem(&ld);
  }
  if ((rc = yaml_depth_check(&ld, text.data, text.len))) {
    kevo_recipe_free(ld.r);
    kevo_buf_free(&text);
    return rc;
  }
  yaml_parser_t parser;
  yaml_parser_initialize(&parser);
  yaml_parser_set_input_string(&parser, (const unsigned char *)text.data, text.len);
  if (!yaml_parser_load(&parser, &ld.doc)) {
    rc = yaml_failure(&ld, &parser);
  } else {
    yaml_node_t *root = yaml_document_get_root_node(&ld.doc);
    if (!root) {
      rc = kevo_fail(err, KEVO_E_RECIPE, "%s:1:1: recipe: the file is empty", path);
    } else {
      rc = load_top(&ld, root);
      yaml_document_t next;
      if (!rc && yaml_parser_load(&parser, &next)) {
        yaml_node_t *extra = yaml_document_get_root_node(&next);
        if (extra)
          rc = fail_at(&ld, KEVO_E_RECIPE, extra, "recipe", "a second YAML document ('---')");
        yaml_document_delete(&next);
      } else if (!rc) {
        rc = yaml_failure(&ld, &parser);
      }
    }
    yaml_document_delete(&ld.doc);
  }
  yaml_parser_delete(&parser);
  kevo_buf_free(&text);
  if (rc) {
    kevo_recipe_free(ld.r);
    return rc;
  }
  *out = ld.r;
  return KEVO_OK;
}
