/* archive.h: the archive, one SQLite file per project directory (./kevo.db or $KEVO_DB).
 *
 * Runs, candidates, evaluations, LLM calls and the per-run journal are rows (docs/archive.md has
 * the schema). Every write function returns only once its rows are committed: a process killed
 * right after a call returned loses nothing that call wrote. Several writers (processes) may
 * share one file: a writer waits for another's transaction up to the busy timeout. One
 * kevo_archive is one connection: use it from one thread at a time (open one per thread).
 *
 * Errors: KEVO_E_DB names the file and what to do (corrupt, not a kevo archive, written by a
 * newer kevo, read-only, locked, disk full); KEVO_E_ARG is misuse (an unknown run or candidate
 * id, a bad status, a missing required field). No function prints or exits. */
#ifndef KEVO_ARCHIVE_H
#define KEVO_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#define KEVO_ARCHIVE_SCHEMA 1          /* the schema version this kevo writes */
#define KEVO_ARCHIVE_DEFAULT "kevo.db" /* in the current directory */
#define KEVO_ARCHIVE_BUSY_MS 10000     /* default wait for another writer */

typedef struct kevo_archive kevo_archive;

typedef struct kevo_archive_opts {
  int readonly;  /* open an existing archive for reading only (never creates, never writes) */
  int busy_ms;   /* wait this long for a lock held by another process; 0: the default */
  int sync_full; /* fsync every commit (survives power loss); default: survives kill -9 */
  int no_check;  /* skip PRAGMA quick_check on open (tests of the check itself use it) */
} kevo_archive_opts;

/* The archive path a command uses when none is given: $KEVO_DB if set and not empty, else
 * "kevo.db". Never NULL. */
const char *kevo_archive_default_path(void);

/* Opens (creating unless opts->readonly) the archive at path, migrating an older schema and
 * checking integrity. *out is NULL on failure. opts may be NULL. */
int kevo_archive_open(const char *path, const kevo_archive_opts *opts, kevo_archive **out,
                      kevo_error *err);
/* Closes the archive (NULL is fine). Statements are finalized, the WAL checkpointed. */
void kevo_archive_close(kevo_archive *a);
const char *kevo_archive_path(const kevo_archive *a);
/* The schema version found in the file before any migration on open (0 for a new file). */
int kevo_archive_schema_found(const kevo_archive *a);

/* --- writes (all strings NUL-terminated unless a length is given; NULL stores NULL) ------- */

typedef struct kevo_run_spec {
  const char *recipe;      /* recipe name */
  const char *recipe_path; /* file it was loaded from */
  const char *recipe_hash; /* sha256 hex of its text */
  const char *strategy;    /* strategy name */
  const char *config;      /* JSON text of the run's options */
  int has_seed;
  int64_t seed;
} kevo_run_spec;

/* A new run with status "running", stamped with kevo's version, commit and the host name. */
int kevo_archive_run_create(kevo_archive *a, const kevo_run_spec *spec, int64_t *id,
                            kevo_error *err);
/* status: "done", "failed" or "killed" (else KEVO_E_ARG); stamps the finish time. */
int kevo_archive_run_finish(kevo_archive *a, int64_t run, const char *status, kevo_error *err);

/* A finished run goes back to "running" (kevo run --resume), its finish time cleared. */
int kevo_archive_run_reopen(kevo_archive *a, int64_t run, kevo_error *err);

/* Groups the writes that follow into one transaction (BEGIN IMMEDIATE: the write lock is
 * taken now): until kevo_archive_commit returns, none of them is visible or durable, and a
 * process killed in between leaves none of them. kevo run writes a batch's candidates,
 * evaluations and journal entry this way. Rollback of no open transaction does nothing. */
int kevo_archive_begin(kevo_archive *a, kevo_error *err);
int kevo_archive_commit(kevo_archive *a, kevo_error *err);
void kevo_archive_rollback(kevo_archive *a);

typedef struct kevo_candidate_spec {
  int64_t run;        /* required */
  int64_t parent;     /* 0: none; else a candidate of the archive */
  const char *origin; /* seed | llm | mutate | tune | ... (required) */
  const char *lang;   /* cuda | triton (required) */
  const char *source; /* required; its sha256 is stored beside it */
  size_t source_len;  /* 0: strlen(source) */
  const char *launch; /* the launch chunk, if the source does not carry one */
  const char *knobs;  /* JSON text */
} kevo_candidate_spec;

int kevo_archive_candidate_add(kevo_archive *a, const kevo_candidate_spec *spec, int64_t *id,
                               kevo_error *err);

typedef struct kevo_eval_spec {
  int64_t candidate;       /* required; the run is the candidate's */
  const char *stage;       /* compile | verify | bench | done (required) */
  const char *verdict;     /* ok | wrong | ... (required) */
  int ok;                  /* 1 when the candidate is correct */
  double speedup;          /* NaN: taken from result's bench.speedup if there */
  double median_ms;        /* NaN: taken from result's bench.median_ms if there */
  const char *result;      /* JSON text of the evaluation result */
  const char *fingerprint; /* JSON text: device, clocks, driver, kevo commit */
} kevo_eval_spec;

int kevo_archive_eval_add(kevo_archive *a, const kevo_eval_spec *spec, int64_t *id,
                          kevo_error *err);

typedef struct kevo_llm_call_spec {
  int64_t run; /* 0: not tied to a run */
  const char *provider, *model;
  const char *request;  /* required: the request body as sent */
  size_t request_len;   /* 0: strlen */
  const char *response; /* the raw response body, before any parsing (NULL if none came) */
  size_t response_len;  /* 0: strlen */
  int http_status;      /* 0: none (transport error) */
  int64_t input_tokens, output_tokens;
  double cost, ms;
  const char *error;
} kevo_llm_call_spec;

int kevo_archive_llm_call_add(kevo_archive *a, const kevo_llm_call_spec *spec, int64_t *id,
                              kevo_error *err);

/* Appends entry (kind, request, response) to the run's journal; *seq receives its number, one
 * more than the run's last (1 for the first), assigned atomically even with several writers.
 * response may be NULL. Lengths of 0 mean strlen. Bytes are stored exactly as given. */
int kevo_archive_journal_append(kevo_archive *a, int64_t run, const char *kind, const char *request,
                                size_t request_len, const char *response, size_t response_len,
                                int64_t *seq, kevo_error *err);

/* --- reads: rows are handed to a callback, valid only during the call ----------------------- */

/* A result row, valid only during the callback it is handed to; read it with kevo_row_*. */
typedef struct kevo_row {
  struct sqlite3_stmt *st;
} kevo_row;
enum { KEVO_COL_NULL, KEVO_COL_INT, KEVO_COL_REAL, KEVO_COL_TEXT };

int kevo_row_count(const kevo_row *r);
const char *kevo_row_name(const kevo_row *r, int i);
int kevo_row_type(const kevo_row *r, int i);
/* Column index by name, or -1. */
int kevo_row_find(const kevo_row *r, const char *name);
/* Values by column name; a missing or NULL column gives def / NULL. */
int64_t kevo_row_int(const kevo_row *r, const char *name, int64_t def);
double kevo_row_real(const kevo_row *r, const char *name, double def);
const char *kevo_row_text(const kevo_row *r, const char *name, size_t *len);
/* Values by index (the type decides which one means something). */
int64_t kevo_row_int_at(const kevo_row *r, int i);
double kevo_row_real_at(const kevo_row *r, int i);
const char *kevo_row_text_at(const kevo_row *r, int i, size_t *len);

/* The row as a new JSON object keyed by column name (NULL columns absent, `ok` a boolean), or
 * NULL when out of memory; the JSON columns (config, knobs, result, fingerprint) are nested
 * values. The caller frees it with cJSON_Delete. */
struct cJSON *kevo_row_json(const kevo_row *r);

/* Return nonzero to stop the iteration early (not an error). */
typedef int (*kevo_row_fn)(void *ud, const kevo_row *row);

/* Every run, oldest first, with: candidates, evaluations, ok_evaluations, best_speedup (NULL if
 * none ok), input_tokens, output_tokens, cost, llm_calls. */
int kevo_archive_runs(kevo_archive *a, kevo_row_fn fn, void *ud, kevo_error *err);
/* One run with the same columns; *found = 0 if there is none (not an error). */
int kevo_archive_run(kevo_archive *a, int64_t run, kevo_row_fn fn, void *ud, int *found,
                     kevo_error *err);
/* The run's candidates in id order, each with evaluations and best_speedup. */
int kevo_archive_candidates(kevo_archive *a, int64_t run, kevo_row_fn fn, void *ud,
                            kevo_error *err);
/* Evaluations of one candidate (candidate > 0) or of a whole run (candidate == 0), id order. */
int kevo_archive_evaluations(kevo_archive *a, int64_t candidate, int64_t run, kevo_row_fn fn,
                             void *ud, kevo_error *err);
/* The fastest ok evaluation of the run (evaluation columns plus the candidate's as
 * candidate_*, e.g. candidate_source); *found = 0 if none. */
int kevo_archive_best(kevo_archive *a, int64_t run, kevo_row_fn fn, void *ud, int *found,
                      kevo_error *err);
/* Candidates of the run ranked by their best ok speed-up (fastest first), at most limit. */
int kevo_archive_top(kevo_archive *a, int64_t run, int limit, kevo_row_fn fn, void *ud,
                     kevo_error *err);
/* (verdict, n) rows for the run's evaluations, most frequent first. */
int kevo_archive_verdicts(kevo_archive *a, int64_t run, kevo_row_fn fn, void *ud, kevo_error *err);
/* The run's LLM calls in id order, without their bodies: id, run, provider, model, http_status,
 * input_tokens, output_tokens, cost, ms, error, created. */
int kevo_archive_llm_calls(kevo_archive *a, int64_t run, kevo_row_fn fn, void *ud, kevo_error *err);
/* The most recent successful call (a response, no error) whose request is byte-equal to
 * request; *found = 0 if none. */
int kevo_archive_llm_call_lookup(kevo_archive *a, const char *request, size_t request_len,
                                 kevo_row_fn fn, void *ud, int *found, kevo_error *err);
/* The oldest call (attempt) of run with after < id <= upto whose request is byte-equal to
 * request, whatever its outcome; *found = 0 if none. A resume settles each attempt it stored
 * but did not journal again, once, in the order they were stored (lua/kevo/llm.lua). */
int kevo_archive_llm_call_next(kevo_archive *a, const char *request, size_t request_len,
                               int64_t run, int64_t after, int64_t upto, kevo_row_fn fn, void *ud,
                               int *found, kevo_error *err);
/* Entry seq of the run's journal (columns run, seq, kind, request, response, created). */
int kevo_archive_journal_get(kevo_archive *a, int64_t run, int64_t seq, kevo_row_fn fn, void *ud,
                             int *found, kevo_error *err);
/* How many entries the run's journal holds (its last seq). */
int kevo_archive_journal_count(kevo_archive *a, int64_t run, int64_t *n, kevo_error *err);

#endif
