/* kevo runs [--db PATH] [--json]: one line per run of the archive. */
#include "archive.h"
#include "registry.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static void format_time(double t, char *out, size_t n) {
  time_t s = (time_t)t;
  struct tm tm;
  if (t <= 0 || !localtime_r(&s, &tm) || !strftime(out, n, "%Y-%m-%d %H:%M", &tm))
    snprintf(out, n, "-");
}

static void format_count(int64_t v, char *out, size_t n) {
  if (v >= 10000000)
    snprintf(out, n, "%.1fM", (double)v / 1e6);
  else if (v >= 10000)
    snprintf(out, n, "%.1fk", (double)v / 1e3);
  else
    snprintf(out, n, "%lld", (long long)v);
}

static int print_run(void *ud, const kevo_row *r) {
  int *n = ud;
  if ((*n)++ == 0)
    printf("%5s  %-16s  %-16s  %-12s  %-7s  %13s  %8s  %7s\n", "RUN", "STARTED", "RECIPE",
           "STRATEGY", "STATUS", "EVALS (OK)", "BEST", "TOKENS");
  char started[32], tokens[16], evals[40], best[24];
  format_time(kevo_row_real(r, "created", 0), started, sizeof started);
  format_count(kevo_row_int(r, "input_tokens", 0) + kevo_row_int(r, "output_tokens", 0), tokens,
               sizeof tokens);
  snprintf(evals, sizeof evals, "%lld (%lld)", (long long)kevo_row_int(r, "evaluations", 0),
           (long long)kevo_row_int(r, "ok_evaluations", 0));
  double b = kevo_row_real(r, "best_speedup", NAN);
  if (isnan(b))
    snprintf(best, sizeof best, "-");
  else
    snprintf(best, sizeof best, "%.2fx", b);
  const char *recipe = kevo_row_text(r, "recipe", NULL);
  const char *strategy = kevo_row_text(r, "strategy", NULL);
  printf("%5lld  %-16s  %-16.16s  %-12.12s  %-7s  %13s  %8s  %7s\n",
         (long long)kevo_row_int(r, "id", 0), started, recipe ? recipe : "-",
         strategy ? strategy : "-", kevo_row_text(r, "status", NULL), evals, best, tokens);
  return 0;
}

static int json_run(void *ud, const kevo_row *r) {
  cJSON *o = kevo_row_json(r);
  if (!o) return 1;
  cJSON_AddItemToArray(ud, o);
  return 0;
}

static int runs_main(int argc, char **argv) {
  const char *path = kevo_archive_default_path();
  int as_json = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) {
      as_json = 1;
    } else if (!strcmp(argv[i], "--db") && i + 1 < argc) {
      path = argv[++i];
    } else if (!strncmp(argv[i], "--db=", 5)) {
      path = argv[i] + 5;
    } else {
      fprintf(stderr,
              "kevo runs: unexpected argument '%s'\nusage: kevo runs [--db PATH] [--json]\n",
              argv[i]);
      return KEVO_EXIT_USAGE;
    }
  }
  struct stat sb;
  if (stat(path, &sb) != 0) { /* a directory where nothing ran yet: no runs, not an error */
    fprintf(stderr, "kevo runs: no archive at %s yet (kevo run creates it)\n", path);
    if (as_json) printf("[]\n");
    return KEVO_EXIT_OK;
  }
  kevo_archive_opts opts = {.readonly = 1};
  kevo_archive *a = NULL;
  kevo_error err = {0};
  if (kevo_archive_open(path, &opts, &a, &err)) {
    fprintf(stderr, "kevo runs: %s\n", err.msg);
    return KEVO_EXIT_FAILED;
  }
  int rc, n = 0;
  if (as_json) {
    cJSON *arr = cJSON_CreateArray();
    rc = arr ? kevo_archive_runs(a, json_run, arr, &err) : KEVO_E_NOMEM;
    char *text = rc ? NULL : cJSON_Print(arr);
    if (text) printf("%s\n", text);
    if (!rc && !text) rc = kevo_fail(&err, KEVO_E_NOMEM, "out of memory");
    free(text);
    cJSON_Delete(arr);
  } else {
    rc = kevo_archive_runs(a, print_run, &n, &err);
    if (!rc && n == 0) printf("no runs in %s yet\n", path);
  }
  kevo_archive_close(a);
  if (rc) {
    fprintf(stderr, "kevo runs: %s\n", err.msg);
    return KEVO_EXIT_FAILED;
  }
  return KEVO_EXIT_OK;
}

const struct kevo_command kevo_cmd_runs = {
    "runs", "list the runs in the archive",
    "usage: kevo runs [--db PATH] [--json]\n\n"
    "Lists the runs recorded in the archive (./kevo.db, or $KEVO_DB, or --db PATH), oldest\n"
    "first: id, start time, recipe, strategy, status, evaluations (ok ones in parentheses),\n"
    "best speed-up of a correct candidate, and LLM tokens spent (input + output).\n\n"
    "  --db PATH   the archive to read\n"
    "  --json      print a JSON array of runs, with every column and count\n\n"
    "Reads only: never creates or changes the archive. No archive yet is not an error.\n"
    "Exit: 0 listed (or nothing to list), 1 the archive is unreadable (corrupt, locked, from a\n"
    "newer kevo: the message says which and what to do), 2 bad usage.\n",
    runs_main, 0};
