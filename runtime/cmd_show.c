/* kevo show RUN [--db PATH] [--json]: one run in detail: its settings, counts by verdict, the best
 * candidate with the head of its source, and the top candidates. */
#include "archive.h"
#include "registry.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

enum { SHOW_TOP = 10, SHOW_SOURCE_LINES = 12 };

static const char *text_or(const kevo_row *r, const char *name, const char *def) {
  const char *s = kevo_row_text(r, name, NULL);
  return s ? s : def;
}

static void format_time(double t, char *out, size_t n) {
  time_t s = (time_t)t;
  struct tm tm;
  if (t <= 0 || !localtime_r(&s, &tm) || !strftime(out, n, "%Y-%m-%d %H:%M:%S", &tm))
    snprintf(out, n, "-");
}

/* The model file of a run evaluated by the model evaluator (its config's evaluator_spec is
 * "model:FILE"), copied into out; 0 for a run measured on a GPU. */
static int synthetic_model(const kevo_row *r, char *out, size_t n) {
  const char *config = kevo_row_text(r, "config", NULL);
  cJSON *c = config ? cJSON_Parse(config) : NULL;
  const cJSON *spec = cJSON_GetObjectItem(c, "evaluator_spec");
  int yes = cJSON_IsString(spec) && !strncmp(spec->valuestring, "model:", 6);
  if (yes) snprintf(out, n, "%s", spec->valuestring + 6);
  cJSON_Delete(c);
  return yes;
}

/* ud: an int set to 1 when the run's timings are synthetic. */
static int print_details(void *ud, const kevo_row *r) {
  char started[32], finished[32], model[1024];
  double t0 = kevo_row_real(r, "created", 0), t1 = kevo_row_real(r, "finished", 0);
  format_time(t0, started, sizeof started);
  format_time(t1, finished, sizeof finished);
  printf("run %lld: %s with %s (%s)\n", (long long)kevo_row_int(r, "id", 0),
         text_or(r, "recipe", "-"), text_or(r, "strategy", "-"), text_or(r, "status", "?"));
  if (synthetic_model(r, model, sizeof model)) {
    *(int *)ud = 1;
    printf("  SYNTHETIC   every verdict and time of this run comes from the model evaluator\n"
           "              %s (KEVO_EVALUATOR), not from a GPU: nothing was measured\n",
           model);
  }
  printf("  started     %s", started);
  if (t1 > 0) printf("   finished %s (%.0f s)", finished, t1 - t0);
  printf("\n  recipe      %s", text_or(r, "recipe_path", "-"));
  const char *hash = kevo_row_text(r, "recipe_hash", NULL);
  if (hash) printf(" (sha256 %.12s)", hash);
  printf("\n");
  if (kevo_row_find(r, "seed") >= 0 && kevo_row_text(r, "seed", NULL))
    printf("  seed        %lld\n", (long long)kevo_row_int(r, "seed", 0));
  const char *config = kevo_row_text(r, "config", NULL);
  if (config) printf("  config      %s\n", config);
  printf("  kevo        %s (%s) on %s\n", text_or(r, "kevo_version", "?"),
         text_or(r, "kevo_commit", "?"), text_or(r, "host", "?"));
  printf("  candidates  %lld, evaluations %lld (%lld ok), journal %lld entries\n",
         (long long)kevo_row_int(r, "candidates", 0), (long long)kevo_row_int(r, "evaluations", 0),
         (long long)kevo_row_int(r, "ok_evaluations", 0), (long long)kevo_row_int(r, "journal", 0));
  printf("  LLM         %lld calls, %lld tokens in, %lld out, cost %.4f\n",
         (long long)kevo_row_int(r, "llm_calls", 0), (long long)kevo_row_int(r, "input_tokens", 0),
         (long long)kevo_row_int(r, "output_tokens", 0), kevo_row_real(r, "cost", 0));
  return 1;
}

static int print_verdict(void *ud, const kevo_row *r) {
  int *n = ud;
  printf("%s%s %lld", (*n)++ ? ", " : "verdicts: ", text_or(r, "verdict", "?"),
         (long long)kevo_row_int(r, "n", 0));
  return 0;
}

static void print_number(const char *fmt, double v) {
  if (isnan(v))
    printf("%10s", "-");
  else
    printf(fmt, v);
}

/* ud: an int, 1 when the run's timings are synthetic. */
static int print_best(void *ud, const kevo_row *r) {
  printf("best%s: candidate %lld (%s, %s", *(int *)ud ? " (synthetic)" : "",
         (long long)kevo_row_int(r, "candidate", 0), text_or(r, "candidate_origin", "?"),
         text_or(r, "candidate_lang", "?"));
  if (kevo_row_int(r, "candidate_parent", 0))
    printf(", parent %lld", (long long)kevo_row_int(r, "candidate_parent", 0));
  printf("), evaluation %lld:", (long long)kevo_row_int(r, "id", 0));
  double s = kevo_row_real(r, "speedup", NAN), ms = kevo_row_real(r, "median_ms", NAN);
  if (!isnan(s)) printf(" %.2fx", s);
  if (!isnan(ms)) printf(" %.4f ms", ms);
  const char *knobs = kevo_row_text(r, "candidate_knobs", NULL);
  if (knobs) printf(" knobs %s", knobs);
  printf("\n");
  const char *src = text_or(r, "candidate_source", "");
  for (int line = 0; *src && line < SHOW_SOURCE_LINES; line++) {
    const char *nl = strchr(src, '\n');
    int len = nl ? (int)(nl - src) : (int)strlen(src);
    printf("  | %.*s\n", len, src);
    src = nl ? nl + 1 : src + len;
  }
  if (*src) printf("  | ... (kevo export prints it whole)\n");
  return 1;
}

static int print_top(void *ud, const kevo_row *r) {
  int *n = ud;
  if ((*n)++ == 0)
    printf("top candidates:\n%4s  %9s  %10s  %10s  %-10s  %-6s  %7s  %s\n", "#", "CANDIDATE",
           "SPEEDUP", "MEDIAN_MS", "ORIGIN", "LANG", "PARENT", "KNOBS");
  printf("%4d  %9lld  ", *n, (long long)kevo_row_int(r, "id", 0));
  print_number("%9.2fx", kevo_row_real(r, "speedup", NAN));
  printf("  ");
  print_number("%10.4f", kevo_row_real(r, "median_ms", NAN));
  int64_t parent = kevo_row_int(r, "parent", 0);
  char p[24] = "-";
  if (parent) snprintf(p, sizeof p, "%lld", (long long)parent);
  /* origins are whole (a strategy names them freely); a long one shifts the row, not cut */
  printf("  %-10s  %-6.6s  %7s  %s\n", text_or(r, "origin", "-"), text_or(r, "lang", "-"), p,
         text_or(r, "knobs", ""));
  return 0;
}

/* JSON output: each callback adds rows to the object or array it is given. */
struct json_ud {
  cJSON *into;
  const char *key; /* NULL: append to an array */
};

static int json_row(void *ud, const kevo_row *r) {
  struct json_ud *u = ud;
  cJSON *o = kevo_row_json(r);
  if (!o) return 1;
  if (u->key)
    cJSON_AddItemToObject(u->into, u->key, o);
  else
    cJSON_AddItemToArray(u->into, o);
  return 0;
}

static int json_verdict(void *ud, const kevo_row *r) {
  cJSON_AddNumberToObject(ud, text_or(r, "verdict", "?"), (double)kevo_row_int(r, "n", 0));
  return 0;
}

/* ud: a char[1024] given the model file of a synthetic run, "" for a measured one. */
static int json_synthetic(void *ud, const kevo_row *r) {
  char *model = ud;
  if (!synthetic_model(r, model, 1024)) model[0] = 0;
  return 1;
}

static int show_json(kevo_archive *a, int64_t run, kevo_error *err) {
  cJSON *root = cJSON_CreateObject();
  struct json_ud run_ud = {root, "run"}, best_ud = {root, "best"}, top_ud = {NULL, NULL};
  int found, rc = root ? kevo_archive_run(a, run, json_row, &run_ud, &found, err) : KEVO_E_NOMEM;
  cJSON *verdicts = rc ? NULL : cJSON_AddObjectToObject(root, "verdicts");
  if (!rc && !(top_ud.into = verdicts ? cJSON_AddArrayToObject(root, "top") : NULL))
    rc = kevo_fail(err, KEVO_E_NOMEM, "out of memory");
  char model[1024] = "";
  if (!rc) rc = kevo_archive_run(a, run, json_synthetic, model, &found, err);
  if (!rc && model[0]) cJSON_AddStringToObject(root, "synthetic", model);
  if (!rc && !(rc = kevo_archive_verdicts(a, run, json_verdict, verdicts, err)) &&
      !(rc = kevo_archive_best(a, run, json_row, &best_ud, &found, err)) &&
      !(rc = kevo_archive_top(a, run, SHOW_TOP, json_row, &top_ud, err))) {
    char *text = cJSON_Print(root);
    if (text)
      printf("%s\n", text);
    else
      rc = kevo_fail(err, KEVO_E_NOMEM, "out of memory");
    free(text);
  }
  cJSON_Delete(root);
  return rc;
}

static int show_text(kevo_archive *a, int64_t run, kevo_error *err) {
  int found = 0, n = 0, rc, synthetic = 0;
  if ((rc = kevo_archive_run(a, run, print_details, &synthetic, &found, err)) ||
      (rc = kevo_archive_verdicts(a, run, print_verdict, &n, err)))
    return rc;
  printf(n ? "\n" : "verdicts: no evaluations yet\n");
  if ((rc = kevo_archive_best(a, run, print_best, &synthetic, &found, err))) return rc;
  if (!found) printf("best: no correct candidate yet\n");
  n = 0;
  rc = kevo_archive_top(a, run, SHOW_TOP, print_top, &n, err);
  if (!rc && n && synthetic) printf("(synthetic: speed-ups and times from the model evaluator)\n");
  return rc;
}

static int last_run(void *ud, const kevo_row *r) {
  *(int64_t *)ud = kevo_row_int(r, "id", 0);
  return 0;
}

static int show_main(int argc, char **argv) {
  const char *path = kevo_archive_default_path(), *which = NULL;
  int as_json = 0, bad = 0;
  for (int i = 1; i < argc && !bad; i++) {
    if (!strcmp(argv[i], "--json"))
      as_json = 1;
    else if (!strcmp(argv[i], "--db") && i + 1 < argc)
      path = argv[++i];
    else if (!strncmp(argv[i], "--db=", 5))
      path = argv[i] + 5;
    else if (!which && argv[i][0] != '-')
      which = argv[i];
    else
      bad = 1;
  }
  char *end = NULL;
  long long run = which && strcmp(which, "last") ? strtoll(which, &end, 10) : 0;
  if (bad || !which || (end && (*end || run <= 0))) {
    fprintf(stderr, "usage: kevo show RUN [--db PATH] [--json]   (RUN: a run id or 'last')\n");
    return KEVO_EXIT_USAGE;
  }
  struct stat sb;
  if (stat(path, &sb) != 0) {
    fprintf(stderr, "kevo show: no archive at %s (%s): no run to show\n", path, strerror(errno));
    return KEVO_EXIT_USAGE;
  }
  kevo_archive_opts opts = {.readonly = 1};
  kevo_archive *a = NULL;
  kevo_error err = {0};
  if (kevo_archive_open(path, &opts, &a, &err)) {
    fprintf(stderr, "kevo show: %s\n", err.msg);
    return KEVO_EXIT_FAILED;
  }
  int64_t id = run;
  int found = 0, rc = 0, exit_code = KEVO_EXIT_OK;
  if (!strcmp(which, "last")) rc = kevo_archive_runs(a, last_run, &id, &err);
  if (!rc) rc = kevo_archive_run(a, id, NULL, NULL, &found, &err);
  if (!rc && !found) {
    if (id)
      fprintf(stderr, "kevo show: no run %lld in %s (kevo runs lists them)\n", (long long)id, path);
    else
      fprintf(stderr, "kevo show: no runs in %s yet\n", path);
    exit_code = KEVO_EXIT_USAGE;
  } else if (!rc) {
    rc = as_json ? show_json(a, id, &err) : show_text(a, id, &err);
  }
  if (rc) {
    fprintf(stderr, "kevo show: %s\n", err.msg);
    exit_code = KEVO_EXIT_FAILED;
  }
  kevo_archive_close(a);
  return exit_code;
}

const struct kevo_command kevo_cmd_show = {
    "show", "show one run: settings, verdicts, the best candidate, the top ten",
    "usage: kevo show RUN [--db PATH] [--json]\n\n"
    "Shows run RUN (an id from kevo runs, or 'last') of the archive (./kevo.db, or $KEVO_DB, or\n"
    "--db PATH): its recipe, strategy, seed, config and provenance; its candidates, evaluations\n"
    "and LLM usage; evaluations counted by verdict; the best correct candidate (speed-up, median\n"
    "time, the first lines of its source); and the ten fastest correct candidates. A run\n"
    "evaluated by the model evaluator (KEVO_EVALUATOR=model:FILE) says SYNTHETIC: its verdicts\n"
    "and times were computed, not measured (--json: \"synthetic\": FILE).\n\n"
    "  --db PATH   the archive to read\n"
    "  --json      print {run, verdicts, best, top} as JSON (best includes the whole source)\n\n"
    "Reads only: never creates or changes the archive.\n"
    "Exit: 0 shown, 1 the archive is unreadable (corrupt, locked, from a newer kevo: the message\n"
    "says which and what to do), 2 bad usage, no such run, or no archive.\n",
    show_main, 0};
