/* The expression language of recipes (kevo_expr_eval): values, precedence, integer semantics,
 * and errors that name the column. */
#include "check.h"
#include "recipe.h"

#include <math.h>

static kevo_param params[] = {{"M", 16384}, {"N", 1000}, {"K", 7}, {"Z", 0}};
static const kevo_shape shape = {"test", 4, params};

static int eval(const char *e, double *v, kevo_error *err) {
  return kevo_expr_eval(e, &shape, v, err);
}

#define EQ(expr, want)                                                                             \
  do {                                                                                             \
    double v_ = NAN;                                                                               \
    kevo_error e_ = {0};                                                                           \
    int rc_ = eval(expr, &v_, &e_);                                                                \
    CHECK(rc_ == KEVO_OK && v_ == (want));                                                         \
    if (rc_ || v_ != (want)) fprintf(stderr, "  %s = %g (%s)\n", expr, v_, e_.msg);                \
  } while (0)

#define BAD(expr, want)                                                                            \
  do {                                                                                             \
    double v_;                                                                                     \
    kevo_error e_ = {0};                                                                           \
    CHECK(eval(expr, &v_, &e_) == KEVO_E_PARSE);                                                   \
    CHECK_STR_CONTAINS(e_.msg, want);                                                              \
  } while (0)

int main(void) {
  EQ("42", 42);
  EQ("  M ", 16384);
  EQ("8*M*N", 8.0 * 16384 * 1000);
  EQ("1 + 2 * 3", 7);
  EQ("(1 + 2) * 3", 9);
  EQ("10 - 4 - 3", 3);    /* left-associative */
  EQ("2 ** 3 ** 2", 512); /* right-associative */
  EQ("-2 ** 2", -4);      /* ** binds tighter than unary minus */
  EQ("7 / 2", 3);         /* integer division truncates, as in C */
  EQ("-7 / 2", -3);
  EQ("-7 % 3", -1);
  EQ("7.0 / 2", 3.5); /* a float makes it exact */
  EQ("1e-3 * 1000", 1);
  EQ("cdiv(N, 256)", 4);
  EQ("cdiv(-7, 2)", -3);
  EQ("cdiv(7.5, 2)", 4);
  EQ("min(M, N)", 1000);
  EQ("max(M, N)", 16384);
  EQ("min(max(K, 3), cdiv(M, 2))", 7);
  EQ("--K", 7);
  EQ("+K", 7);
  EQ("K % 4", 3);
  EQ("2**62 + (2**62 - 1)", 9223372036854775807.0);
  EQ("(((((((((((K)))))))))))", 7);

  BAD("2 ** -1", "column 3: negative integer exponent");
  BAD("M +", "'M +': column 4: unexpected end");
  BAD("M N", "column 3: unexpected 'N' after the expression");
  BAD("Q * 2", "column 1: unknown name 'Q' (params: M, N, K, Z)");
  BAD("sqrt(M)", "column 1: unknown function 'sqrt' (only min, max, cdiv)");
  BAD("min(M)", "column 6: expected ',' (min takes two arguments)");
  BAD("max(M, N, K)", "column 9: expected ')' to close max(");
  BAD("N / Z", "column 3: division by zero");
  BAD("N % (K - 7)", "column 3: division by zero");
  BAD("cdiv(N, Z)", "column 1: division by zero in cdiv");
  BAD("1.0 / Z", "division by zero");
  BAD("2 ** 63", "integer overflow");
  BAD("M * M * M * M * M", "column 15: integer overflow");
  BAD("99999999999999999999", "column 1: integer too large");
  BAD("10.0 ** 400", "result is not finite");
  BAD("12abc", "column 3: malformed number");
  BAD("M $ 2", "column 3: unexpected '$'");
  BAD("", "unexpected end");
  BAD("(1", "column 3: expected ')'");
  BAD("os.exit(1)", "unknown name 'os'");
  BAD("M; N", "unexpected ';'");

  /* deep nesting is refused, not a stack overflow */
  char deep[400];
  memset(deep, '(', 100);
  strcpy(deep + 100, "1");
  memset(deep + 101, ')', 100);
  deep[201] = 0;
  BAD(deep, "nested too deep");
  char negs[300];
  memset(negs, '-', 200);
  strcpy(negs + 200, "1");
  BAD(negs, "nested too deep");
  char longexpr[1100];
  memset(longexpr, '1', 1099);
  longexpr[1099] = 0;
  BAD(longexpr, "longer than 1024 characters");

  /* exact integers above 2^53 */
  int64_t iv = 0;
  int is_int = 0;
  double dv = 0;
  kevo_error err = {0};
  CHECK(kevo_expr_eval_exact("2**60 + 1", &shape, &iv, &is_int, &dv, &err) == KEVO_OK);
  CHECK(is_int && iv == ((int64_t)1 << 60) + 1);
  CHECK(kevo_expr_eval_exact("M / 3.0", &shape, &iv, &is_int, &dv, &err) == KEVO_OK);
  CHECK(!is_int && fabs(dv - 16384 / 3.0) < 1e-9);
  CHECK(kevo_expr_eval_exact("N", NULL, &iv, &is_int, &dv, &err) == KEVO_E_PARSE);
  CHECK(kevo_expr_eval(NULL, &shape, &dv, &err) == KEVO_E_ARG);
  CHECK_DONE();
}
