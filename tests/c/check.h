/* check.h: the C unit tests' assertions. A failed CHECK prints file:line and the expression
 * and counts a failure; CHECK_DONE() exits 1 if any failed. */
#ifndef KEVO_CHECK_H
#define KEVO_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures, check_count;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    check_count++;                                                                                 \
    if (!(cond)) {                                                                                 \
      check_failures++;                                                                            \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                     \
    }                                                                                              \
  } while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                                            \
  do {                                                                                             \
    check_count++;                                                                                 \
    const char *h_ = (hay), *n_ = (needle);                                                        \
    if (!h_ || !strstr(h_, n_)) {                                                                  \
      check_failures++;                                                                            \
      fprintf(stderr, "%s:%d: expected \"%s\" in \"%s\"\n", __FILE__, __LINE__, n_,                \
              h_ ? h_ : "(null)");                                                                 \
    }                                                                                              \
  } while (0)

#define CHECK_DONE()                                                                               \
  do {                                                                                             \
    printf("%d checks, %d failed\n", check_count, check_failures);                                 \
    return check_failures ? 1 : 0;                                                                 \
  } while (0)

#endif
