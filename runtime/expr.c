/* expr.c: the recipe expression language (kevo_expr_eval, recipe.h). A recursive-descent
 * parser that evaluates as it parses:
 *
 *   expr  := term (('+' | '-') term)*
 *   term  := unary (('*' | '/' | '%') unary)*
 *   unary := ('-' | '+') unary | power
 *   power := atom ('**' unary)?            right-associative, binds tighter than unary minus
 *   atom  := number | param | ('min' | 'max' | 'cdiv') '(' expr ',' expr ')' | '(' expr ')'
 *
 * Integers stay exact int64 (C semantics for / and %, every operation overflow-checked); a
 * number written with '.' or an exponent is a double, and mixing makes a double. Nothing else
 * is reachable: no other names, no other calls, a length and nesting cap. */
#include "recipe.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EXPR_MAX_LEN = 1024, EXPR_MAX_DEPTH = 64 };

typedef struct value {
  int is_int;
  int64_t i;
  double d;
} value;

typedef struct parser {
  const char *src, *p;
  const kevo_shape *shape;
  kevo_error *err;
  int depth;
} parser;

static double as_double(value v) {
  return v.is_int ? (double)v.i : v.d;
}

static value int_value(int64_t i) {
  return (value){1, i, 0};
}

static value float_value(double d) {
  return (value){0, 0, d};
}

/* Fails naming the 1-based column of `at` within the expression. */
__attribute__((format(printf, 3, 4))) static int fail_at(parser *ps, const char *at,
                                                         const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return kevo_fail(ps->err, KEVO_E_PARSE, "'%s': column %d: %s", ps->src, (int)(at - ps->src) + 1,
                   what);
}

static void skip_space(parser *ps) {
  while (*ps->p == ' ' || *ps->p == '\t')
    ps->p++;
}

/* Does the input continue with token `tok` (after blanks)? Consumes it if so. */
static int accept(parser *ps, const char *tok) {
  skip_space(ps);
  size_t n = strlen(tok);
  if (strncmp(ps->p, tok, n) != 0) return 0;
  if (n == 1 && tok[0] == '*' && ps->p[1] == '*') return 0; /* '*' is not the start of '**' */
  ps->p += n;
  return 1;
}

static int finite_or_fail(parser *ps, const char *at, value *v) {
  if (!v->is_int && !isfinite(v->d)) return fail_at(ps, at, "result is not finite");
  return KEVO_OK;
}

static int pow_int(parser *ps, const char *at, int64_t base, int64_t ex, int64_t *out) {
  if (ex < 0) return fail_at(ps, at, "negative integer exponent");
  int64_t r = 1;
  for (int64_t k = 0; k < ex; k++) {
    if (base == 0 || base == 1) {
      r = (base == 0) ? 0 : r;
      break;
    }
    if (base == -1) {
      r = (ex % 2) ? -1 : 1;
      break;
    }
    if (__builtin_mul_overflow(r, base, &r)) return fail_at(ps, at, "integer overflow");
  }
  *out = r;
  return KEVO_OK;
}

/* Applies binary operator op ('+', '-', '*', '/', '%', 'p' for **) to a and b. */
static int apply(parser *ps, const char *at, int op, value a, value b, value *out) {
  if (a.is_int && b.is_int) {
    int64_t r = 0;
    int ovf = 0;
    switch (op) {
    case '+':
      ovf = __builtin_add_overflow(a.i, b.i, &r);
      break;
    case '-':
      ovf = __builtin_sub_overflow(a.i, b.i, &r);
      break;
    case '*':
      ovf = __builtin_mul_overflow(a.i, b.i, &r);
      break;
    case '/':
    case '%':
      if (b.i == 0) return fail_at(ps, at, "division by zero");
      if (a.i == INT64_MIN && b.i == -1) return fail_at(ps, at, "integer overflow");
      r = op == '/' ? a.i / b.i : a.i % b.i;
      break;
    case 'p': {
      int rc = pow_int(ps, at, a.i, b.i, &r);
      if (rc) return rc;
      break;
    }
    }
    if (ovf) return fail_at(ps, at, "integer overflow");
    *out = int_value(r);
    return KEVO_OK;
  }
  double x = as_double(a), y = as_double(b), r = 0;
  switch (op) {
  case '+':
    r = x + y;
    break;
  case '-':
    r = x - y;
    break;
  case '*':
    r = x * y;
    break;
  case '/':
  case '%':
    if (y == 0) return fail_at(ps, at, "division by zero");
    r = op == '/' ? x / y : fmod(x, y);
    break;
  case 'p':
    r = pow(x, y);
    break;
  }
  *out = float_value(r);
  return finite_or_fail(ps, at, out);
}

static int parse_expr(parser *ps, value *out);
static int parse_unary(parser *ps, value *out);

static int parse_number(parser *ps, value *out) {
  const char *start = ps->p;
  const char *q = start;
  int is_float = 0;
  while (isdigit((unsigned char)*q))
    q++;
  if (*q == '.') {
    is_float = 1;
    q++;
    while (isdigit((unsigned char)*q))
      q++;
  }
  if ((*q == 'e' || *q == 'E') &&
      (isdigit((unsigned char)q[1]) ||
       ((q[1] == '+' || q[1] == '-') && isdigit((unsigned char)q[2])))) {
    is_float = 1;
    q += 2;
    while (isdigit((unsigned char)*q))
      q++;
  }
  if (isalpha((unsigned char)*q) || *q == '_') return fail_at(ps, q, "malformed number");
  char text[64];
  size_t n = (size_t)(q - start);
  if (n >= sizeof text) return fail_at(ps, start, "number too long");
  memcpy(text, start, n);
  text[n] = 0;
  ps->p = q;
  if (is_float) {
    *out = float_value(strtod(text, NULL));
    return finite_or_fail(ps, start, out);
  }
  int64_t v = 0;
  for (size_t k = 0; k < n; k++)
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, text[k] - '0', &v))
      return fail_at(ps, start, "integer too large");
  *out = int_value(v);
  return KEVO_OK;
}

/* min(a, b), max(a, b), cdiv(a, b): ps->p is just past the name. */
static int parse_call(parser *ps, const char *name_at, const char *name, value *out) {
  value a, b;
  int rc;
  if (!accept(ps, "(")) return fail_at(ps, ps->p, "expected '(' after %s", name);
  if ((rc = parse_expr(ps, &a))) return rc;
  if (!accept(ps, ",")) return fail_at(ps, ps->p, "expected ',' (%s takes two arguments)", name);
  if ((rc = parse_expr(ps, &b))) return rc;
  if (!accept(ps, ")")) return fail_at(ps, ps->p, "expected ')' to close %s(", name);
  if (strcmp(name, "cdiv") == 0) {
    if (a.is_int && b.is_int) {
      if (b.i == 0) return fail_at(ps, name_at, "division by zero in cdiv");
      if (a.i == INT64_MIN && b.i == -1) return fail_at(ps, name_at, "integer overflow");
      int64_t q = a.i / b.i;
      if (a.i % b.i != 0 && ((a.i < 0) == (b.i < 0))) q++;
      *out = int_value(q);
      return KEVO_OK;
    }
    if (as_double(b) == 0) return fail_at(ps, name_at, "division by zero in cdiv");
    *out = float_value(ceil(as_double(a) / as_double(b)));
    return finite_or_fail(ps, name_at, out);
  }
  int want_min = strcmp(name, "min") == 0;
  if (a.is_int && b.is_int)
    *out = int_value(want_min ? (a.i < b.i ? a.i : b.i) : (a.i > b.i ? a.i : b.i));
  else
    *out =
        float_value(want_min ? fmin(as_double(a), as_double(b)) : fmax(as_double(a), as_double(b)));
  return KEVO_OK;
}

static int parse_atom(parser *ps, value *out) {
  skip_space(ps);
  const char *at = ps->p;
  if (isdigit((unsigned char)*at) || (*at == '.' && isdigit((unsigned char)at[1])))
    return parse_number(ps, out);
  if (*at == '(') {
    ps->p++;
    if (++ps->depth > EXPR_MAX_DEPTH) return fail_at(ps, at, "nested too deep");
    int rc = parse_expr(ps, out);
    ps->depth--;
    if (rc) return rc;
    if (!accept(ps, ")")) return fail_at(ps, ps->p, "expected ')'");
    return KEVO_OK;
  }
  if (isalpha((unsigned char)*at) || *at == '_') {
    const char *q = at;
    while (isalnum((unsigned char)*q) || *q == '_')
      q++;
    char name[64];
    size_t n = (size_t)(q - at);
    if (n >= sizeof name) return fail_at(ps, at, "name too long");
    memcpy(name, at, n);
    name[n] = 0;
    ps->p = q;
    skip_space(ps);
    if (*ps->p == '(') {
      if (strcmp(name, "min") && strcmp(name, "max") && strcmp(name, "cdiv"))
        return fail_at(ps, at, "unknown function '%s' (only min, max, cdiv)", name);
      if (++ps->depth > EXPR_MAX_DEPTH) return fail_at(ps, at, "nested too deep");
      int rc = parse_call(ps, at, name, out);
      ps->depth--;
      return rc;
    }
    for (size_t k = 0; ps->shape && k < ps->shape->nparams; k++)
      if (strcmp(ps->shape->params[k].name, name) == 0) {
        *out = int_value(ps->shape->params[k].value);
        return KEVO_OK;
      }
    char known[160] = "";
    for (size_t k = 0; ps->shape && k < ps->shape->nparams; k++) {
      size_t used = strlen(known);
      snprintf(known + used, sizeof known - used, "%s%s", k ? ", " : "", ps->shape->params[k].name);
    }
    char detail[256];
    snprintf(detail, sizeof detail, "'%s' (params: %s)", name, *known ? known : "none");
    return fail_at(ps, at, "unknown name %s", detail);
  }
  if (*at == 0) return fail_at(ps, at, "unexpected end (expected a number, a param or '(')");
  char c[2] = {*at, 0};
  return fail_at(ps, at, "unexpected '%s' (expected a number, a param or '(')", c);
}

static int parse_power(parser *ps, value *out) {
  int rc = parse_atom(ps, out);
  if (rc) return rc;
  skip_space(ps);
  const char *at = ps->p;
  if (!accept(ps, "**")) return KEVO_OK;
  value ex;
  if ((rc = parse_unary(ps, &ex))) return rc;
  return apply(ps, at, 'p', *out, ex, out);
}

static int parse_unary(parser *ps, value *out) {
  skip_space(ps);
  const char *at = ps->p;
  if (*at == '-' || *at == '+') {
    ps->p++;
    if (++ps->depth > EXPR_MAX_DEPTH) return fail_at(ps, at, "nested too deep");
    int rc = parse_unary(ps, out);
    ps->depth--;
    if (rc || *at == '+') return rc;
    if (out->is_int) {
      if (out->i == INT64_MIN) return fail_at(ps, at, "integer overflow");
      out->i = -out->i;
    } else {
      out->d = -out->d;
    }
    return KEVO_OK;
  }
  return parse_power(ps, out);
}

static int parse_term(parser *ps, value *out) {
  int rc = parse_unary(ps, out);
  while (!rc) {
    skip_space(ps);
    const char *at = ps->p;
    int op = accept(ps, "*") ? '*' : accept(ps, "/") ? '/' : accept(ps, "%") ? '%' : 0;
    if (!op) break;
    value rhs;
    if ((rc = parse_unary(ps, &rhs))) break;
    rc = apply(ps, at, op, *out, rhs, out);
  }
  return rc;
}

static int parse_expr(parser *ps, value *out) {
  int rc = parse_term(ps, out);
  while (!rc) {
    skip_space(ps);
    const char *at = ps->p;
    int op = accept(ps, "+") ? '+' : accept(ps, "-") ? '-' : 0;
    if (!op) break;
    value rhs;
    if ((rc = parse_term(ps, &rhs))) break;
    rc = apply(ps, at, op, *out, rhs, out);
  }
  return rc;
}

static int eval_value(const char *expr, const kevo_shape *shape, value *out, kevo_error *err) {
  if (!expr) return kevo_fail(err, KEVO_E_ARG, "no expression");
  if (strlen(expr) > EXPR_MAX_LEN)
    return kevo_fail(err, KEVO_E_PARSE, "expression longer than %d characters", EXPR_MAX_LEN);
  parser ps = {expr, expr, shape, err, 0};
  int rc = parse_expr(&ps, out);
  if (rc) return rc;
  skip_space(&ps);
  if (*ps.p) {
    char c[2] = {*ps.p, 0};
    return fail_at(&ps, ps.p, "unexpected '%s' after the expression", c);
  }
  return KEVO_OK;
}

int kevo_expr_eval(const char *expr, const kevo_shape *shape, double *out, kevo_error *err) {
  value v;
  int rc = eval_value(expr, shape, &v, err);
  if (!rc) *out = as_double(v);
  return rc;
}

int kevo_expr_eval_exact(const char *expr, const kevo_shape *shape, int64_t *iout, int *is_int,
                         double *dout, kevo_error *err) {
  value v;
  int rc = eval_value(expr, shape, &v, err);
  if (rc) return rc;
  if (is_int) *is_int = v.is_int;
  if (iout) *iout = v.is_int ? v.i : 0;
  if (dout) *dout = as_double(v);
  return KEVO_OK;
}

int kevo_tensor_numel(const kevo_tensor *t, const kevo_shape *shape, int64_t *out,
                      kevo_error *err) {
  int64_t n = 1;
  for (size_t k = 0; k < t->rank; k++) {
    value v;
    int rc = eval_value(t->dims[k], shape, &v, err);
    if (rc) return rc;
    if (!v.is_int || v.i <= 0)
      return kevo_fail(err, KEVO_E_RECIPE, "%s: dimension %zu ('%s') is not a positive integer",
                       t->name, k, t->dims[k]);
    if (__builtin_mul_overflow(n, v.i, &n) || n > ((int64_t)1 << 50))
      return kevo_fail(err, KEVO_E_RECIPE, "%s: more than 2^50 elements", t->name);
  }
  *out = n;
  return KEVO_OK;
}
