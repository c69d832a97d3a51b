/* archive.c: the SQLite archive (see archive.h and docs/archive.md).
 *
 * One connection per kevo_archive, prepared statements cached on it. Every write is one
 * statement in its own (implicit) transaction, or an explicit BEGIN IMMEDIATE transaction when
 * several statements must land together, and is stepped to completion before the function
 * returns: the commit has reached the WAL file (write(2)) by then, so a kill -9 of the process
 * cannot lose it; with sync_full the WAL is also fsynced, so a power cut cannot either. */
#include "archive.h"
#include "sha256.h"
#include "version.h"

#include <sqlite3.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define KEVO_APPLICATION_ID 0x6B65766F /* "kevo", in the SQLite header */

enum {
  ST_RUN_CREATE,
  ST_RUN_FINISH,
  ST_RUN_REOPEN,
  ST_CANDIDATE_ADD,
  ST_EVAL_ADD,
  ST_LLM_ADD,
  ST_LLM_LOOKUP,
  ST_LLM_NEXT,
  ST_JOURNAL_APPEND,
  ST_JOURNAL_GET,
  ST_JOURNAL_COUNT,
  ST_RUNS,
  ST_CANDIDATES,
  ST_EVALS_CANDIDATE,
  ST_EVALS_RUN,
  ST_BEST,
  ST_TOP,
  ST_VERDICTS,
  ST_LLM_CALLS,
  ST_COUNT
};

#define RUN_COLUMNS                                                                                \
  "SELECT r.id, r.created, r.finished, r.status, r.recipe, r.recipe_path, r.recipe_hash, "         \
  "r.strategy, r.config, r.seed, r.kevo_version, r.kevo_commit, r.host, "                          \
  "(SELECT count(*) FROM candidates c WHERE c.run = r.id) AS candidates, "                         \
  "(SELECT count(*) FROM evaluations e WHERE e.run = r.id) AS evaluations, "                       \
  "(SELECT count(*) FROM evaluations e WHERE e.run = r.id AND e.ok) AS ok_evaluations, "           \
  "(SELECT max(e.speedup) FROM evaluations e WHERE e.run = r.id AND e.ok) AS best_speedup, "       \
  "(SELECT count(*) FROM llm_calls l WHERE l.run = r.id) AS llm_calls, "                           \
  "(SELECT coalesce(sum(l.input_tokens), 0) FROM llm_calls l WHERE l.run = r.id) "                 \
  "AS input_tokens, "                                                                              \
  "(SELECT coalesce(sum(l.output_tokens), 0) FROM llm_calls l WHERE l.run = r.id) "                \
  "AS output_tokens, "                                                                             \
  "(SELECT coalesce(sum(l.cost), 0) FROM llm_calls l WHERE l.run = r.id) AS cost, "                \
  "(SELECT coalesce(max(j.seq), 0) FROM journal j WHERE j.run = r.id) AS journal "                 \
  "FROM runs r "

static const char *const statement_sql[ST_COUNT] = {
    [ST_RUN_CREATE] = "INSERT INTO runs(created, recipe, recipe_path, recipe_hash, strategy, "
                      "config, seed, kevo_version, kevo_commit, host) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    [ST_RUN_FINISH] = "UPDATE runs SET status = ?2, finished = ?3 WHERE id = ?1",
    [ST_RUN_REOPEN] = "UPDATE runs SET status = 'running', finished = NULL WHERE id = ?1",
    [ST_CANDIDATE_ADD] = "INSERT INTO candidates(run, parent, origin, lang, source, source_hash, "
                         "launch, knobs, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    /* the run is the candidate's; speed-up and time default to the result's bench fields */
    [ST_EVAL_ADD] =
        "INSERT INTO evaluations(candidate, run, stage, verdict, ok, speedup, median_ms, result, "
        "fingerprint, created) SELECT ?1, c.run, ?2, ?3, ?4, "
        "coalesce(?5, CASE WHEN json_valid(?7) THEN json_extract(?7, '$.bench.speedup') END), "
        "coalesce(?6, CASE WHEN json_valid(?7) THEN json_extract(?7, '$.bench.median_ms') END), "
        "?7, ?8, ?9 FROM candidates c WHERE c.id = ?1",
    [ST_LLM_ADD] = "INSERT INTO llm_calls(run, provider, model, request_hash, request, response, "
                   "http_status, input_tokens, output_tokens, cost, ms, error, created) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    [ST_LLM_LOOKUP] = "SELECT * FROM llm_calls WHERE request_hash = ?1 AND request = ?2 "
                      "AND response IS NOT NULL AND error IS NULL "
                      "AND (http_status IS NULL OR http_status BETWEEN 200 AND 299) "
                      "ORDER BY id DESC LIMIT 1",
    [ST_LLM_NEXT] = "SELECT * FROM llm_calls WHERE request_hash = ?1 AND request = ?2 "
                    "AND run = ?3 AND id > ?4 AND id <= ?5 ORDER BY id LIMIT 1",
    [ST_JOURNAL_APPEND] = "INSERT INTO journal(run, seq, kind, request, response, created) "
                          "SELECT ?1, coalesce(max(seq), 0) + 1, ?2, ?3, ?4, ?5 "
                          "FROM journal WHERE run = ?1 RETURNING seq",
    [ST_JOURNAL_GET] = "SELECT run, seq, kind, request, response, created FROM journal "
                       "WHERE run = ?1 AND seq = ?2",
    [ST_JOURNAL_COUNT] = "SELECT coalesce(max(seq), 0) FROM journal WHERE run = ?1",
    [ST_RUNS] = RUN_COLUMNS "WHERE ?1 IS NULL OR r.id = ?1 ORDER BY r.id",
    [ST_CANDIDATES] =
        "SELECT c.*, (SELECT count(*) FROM evaluations e WHERE e.candidate = c.id) AS evaluations, "
        "(SELECT max(e.speedup) FROM evaluations e WHERE e.candidate = c.id AND e.ok) "
        "AS best_speedup FROM candidates c WHERE c.run = ?1 ORDER BY c.id",
    [ST_EVALS_CANDIDATE] = "SELECT * FROM evaluations WHERE candidate = ?1 ORDER BY id",
    [ST_EVALS_RUN] = "SELECT * FROM evaluations WHERE run = ?1 ORDER BY id",
    [ST_BEST] = "SELECT e.*, c.parent AS candidate_parent, c.origin AS candidate_origin, "
                "c.lang AS candidate_lang, c.source AS candidate_source, "
                "c.source_hash AS candidate_source_hash, c.launch AS candidate_launch, "
                "c.knobs AS candidate_knobs FROM evaluations e JOIN candidates c "
                "ON c.id = e.candidate WHERE e.run = ?1 AND e.ok "
                "ORDER BY e.speedup IS NULL, e.speedup DESC, e.median_ms IS NULL, e.median_ms, "
                "e.id LIMIT 1",
    /* max() makes SQLite take the other bare columns from the fastest row of each group */
    [ST_TOP] = "SELECT c.id AS id, c.parent AS parent, c.origin AS origin, c.lang AS lang, "
               "c.source_hash AS source_hash, c.knobs AS knobs, max(e.speedup) AS speedup, "
               "e.median_ms AS median_ms, e.id AS evaluation, count(*) AS ok_evaluations "
               "FROM evaluations e JOIN candidates c ON c.id = e.candidate "
               "WHERE e.run = ?1 AND e.ok AND e.speedup IS NOT NULL "
               "GROUP BY c.id ORDER BY speedup DESC, c.id LIMIT ?2",
    [ST_VERDICTS] = "SELECT verdict, count(*) AS n FROM evaluations WHERE run = ?1 "
                    "GROUP BY verdict ORDER BY n DESC, verdict",
    /* usage only: the bodies are large and a report does not need them */
    [ST_LLM_CALLS] = "SELECT id, run, provider, model, http_status, input_tokens, output_tokens, "
                     "cost, ms, error, created FROM llm_calls WHERE run = ?1 ORDER BY id",
};

struct kevo_archive {
  sqlite3 *db;
  int readonly, busy_ms, schema_found;
  int last_rc; /* the SQLite code of the last failure */
  sqlite3_stmt *st[ST_COUNT];
  char path[4096];
};

/* --- errors ------------------------------------------------------------------------------- */

static const char *db_hint(int rc) {
  switch (rc & 0xff) {
  case SQLITE_NOTADB:
    return "it is not an SQLite database: move it away, or pick another file with --db or "
           "KEVO_DB";
  case SQLITE_CORRUPT:
    return "the file is corrupt: restore it from a backup, salvage it with `sqlite3 FILE "
           ".recover`, or move it away to start a new archive";
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    return "another process kept it locked past the busy timeout: wait for that kevo to "
           "finish, or use another --db";
  case SQLITE_READONLY:
  case SQLITE_PERM:
    return "kevo needs write access to the file and to its directory (for the FILE-wal and "
           "FILE-shm files): fix the permissions, or use another --db";
  case SQLITE_CANTOPEN:
    return "check that its directory exists and that kevo may write there";
  case SQLITE_FULL:
    return "the disk is full: free some space";
  case SQLITE_IOERR:
    return "the operating system reported an I/O error: check the disk";
  default:
    return "see docs/archive.md";
  }
}

/* Fills err for a failed SQLite call: a violated foreign key or check is misuse (KEVO_E_ARG),
 * everything else is KEVO_E_DB with the file's name and what to do. */
static int db_fail(kevo_archive *a, kevo_error *err, int rc, const char *doing) {
  const char *msg = a->db ? sqlite3_errmsg(a->db) : sqlite3_errstr(rc);
  a->last_rc = rc;
  if ((rc & 0xff) == SQLITE_CONSTRAINT)
    return kevo_fail(err, KEVO_E_ARG, "archive %s: %s: %s", a->path, doing, msg);
  return kevo_fail(err, KEVO_E_DB, "archive %s: %s: %s; %s", a->path, doing, msg, db_hint(rc));
}

/* --- statements ----------------------------------------------------------------------------- */

/* The cached statement id in *st, reset (a caller that raised half-way through reading rows
 * may have left it mid-step). */
static int stmt(kevo_archive *a, int id, sqlite3_stmt **st, kevo_error *err) {
  *st = NULL;
  if (!a->st[id]) {
    int rc = sqlite3_prepare_v3(a->db, statement_sql[id], -1, SQLITE_PREPARE_PERSISTENT, &a->st[id],
                                NULL);
    if (rc) return db_fail(a, err, rc, "preparing a query");
  }
  sqlite3_reset(a->st[id]);
  sqlite3_clear_bindings(a->st[id]);
  *st = a->st[id];
  return KEVO_OK;
}

static void done(sqlite3_stmt *st) {
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
}

/* Binds text (NULL: SQL NULL; len 0: strlen). The bytes are not copied: callers reset the
 * statement before their arguments go away. */
static void bind_text(sqlite3_stmt *st, int i, const char *s, size_t len) {
  if (!s)
    sqlite3_bind_null(st, i);
  else
    sqlite3_bind_text64(st, i, s, len ? len : strlen(s), SQLITE_STATIC, SQLITE_UTF8);
}

static void bind_id(sqlite3_stmt *st, int i, int64_t id) {
  if (id > 0)
    sqlite3_bind_int64(st, i, id);
  else
    sqlite3_bind_null(st, i);
}

static void bind_real(sqlite3_stmt *st, int i, double v) {
  if (isnan(v))
    sqlite3_bind_null(st, i);
  else
    sqlite3_bind_double(st, i, v);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Steps a write to completion (committing its implicit transaction); *id gets the row id. */
static int write_stmt(kevo_archive *a, sqlite3_stmt *st, int64_t *id, const char *doing,
                      kevo_error *err) {
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) { /* RETURNING */
    if (id) *id = sqlite3_column_int64(st, 0);
    rc = sqlite3_step(st);
  } else if (id) {
    *id = sqlite3_last_insert_rowid(a->db);
  }
  int status = rc == SQLITE_DONE ? KEVO_OK : db_fail(a, err, rc, doing);
  done(st);
  return status;
}

/* Hands every row of st to fn (which may stop early); counts rows into *nrows. */
static int read_rows(kevo_archive *a, sqlite3_stmt *st, kevo_row_fn fn, void *ud, int *nrows,
                     const char *doing, kevo_error *err) {
  kevo_row row = {st};
  int rc, n = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    n++;
    if (fn && fn(ud, &row)) {
      rc = SQLITE_DONE;
      break;
    }
  }
  int status = rc == SQLITE_DONE ? KEVO_OK : db_fail(a, err, rc, doing);
  done(st);
  if (nrows) *nrows = n;
  return status;
}

static int exec(kevo_archive *a, const char *sql, const char *doing, kevo_error *err) {
  int rc = sqlite3_exec(a->db, sql, NULL, NULL, NULL);
  return rc ? db_fail(a, err, rc, doing) : KEVO_OK;
}

/* The first column of the first row of sql as an integer (def if no row). */
static int query_int(kevo_archive *a, const char *sql, int64_t def, int64_t *out, const char *doing,
                     kevo_error *err) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(a->db, sql, -1, &st, NULL);
  if (rc) return db_fail(a, err, rc, doing);
  *out = def;
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    *out = sqlite3_column_int64(st, 0);
    rc = SQLITE_DONE;
  }
  int status = rc == SQLITE_DONE ? KEVO_OK : db_fail(a, err, rc, doing);
  sqlite3_finalize(st);
  return status;
}

/* --- schema and migrations ------------------------------------------------------------------ */

static int migrate_to_1(kevo_archive *a, kevo_error *err) {
  static const char sql[] =
      "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
      "CREATE TABLE runs(id INTEGER PRIMARY KEY, created REAL NOT NULL, finished REAL,"
      " status TEXT NOT NULL DEFAULT 'running'"
      "  CONSTRAINT run_status CHECK (status IN ('running', 'done', 'failed', 'killed')),"
      " recipe TEXT, recipe_path TEXT, recipe_hash TEXT, strategy TEXT,"
      " config TEXT CONSTRAINT config_is_json CHECK (config IS NULL OR json_valid(config)),"
      " seed INTEGER, kevo_version TEXT NOT NULL, kevo_commit TEXT NOT NULL, host TEXT);"
      "CREATE TABLE candidates(id INTEGER PRIMARY KEY,"
      " run INTEGER NOT NULL REFERENCES runs(id),"
      " parent INTEGER REFERENCES candidates(id),"
      " origin TEXT NOT NULL, lang TEXT NOT NULL, source TEXT NOT NULL,"
      " source_hash TEXT NOT NULL, launch TEXT,"
      " knobs TEXT CONSTRAINT knobs_is_json CHECK (knobs IS NULL OR json_valid(knobs)),"
      " created REAL NOT NULL);"
      "CREATE INDEX candidates_run ON candidates(run);"
      "CREATE INDEX candidates_source_hash ON candidates(source_hash);"
      "CREATE TABLE evaluations(id INTEGER PRIMARY KEY,"
      " candidate INTEGER NOT NULL REFERENCES candidates(id),"
      " run INTEGER NOT NULL REFERENCES runs(id),"
      " stage TEXT NOT NULL, verdict TEXT NOT NULL,"
      " ok INTEGER NOT NULL CONSTRAINT ok_means_verdict_ok CHECK (ok = 0 OR"
      "  (ok = 1 AND verdict = 'ok')),"
      " speedup REAL, median_ms REAL,"
      " result TEXT CONSTRAINT result_is_json CHECK (result IS NULL OR json_valid(result)),"
      " fingerprint TEXT CONSTRAINT fingerprint_is_json"
      "  CHECK (fingerprint IS NULL OR json_valid(fingerprint)),"
      " created REAL NOT NULL);"
      "CREATE INDEX evaluations_candidate ON evaluations(candidate);"
      "CREATE INDEX evaluations_run ON evaluations(run, ok, speedup);"
      "CREATE TABLE llm_calls(id INTEGER PRIMARY KEY, run INTEGER REFERENCES runs(id),"
      " provider TEXT, model TEXT, request_hash TEXT NOT NULL, request TEXT NOT NULL,"
      " response TEXT, http_status INTEGER, input_tokens INTEGER, output_tokens INTEGER,"
      " cost REAL, ms REAL, error TEXT, created REAL NOT NULL);"
      "CREATE INDEX llm_calls_request_hash ON llm_calls(request_hash);"
      "CREATE INDEX llm_calls_run ON llm_calls(run);"
      "CREATE TABLE journal(run INTEGER NOT NULL REFERENCES runs(id),"
      " seq INTEGER NOT NULL CHECK (seq >= 1), kind TEXT NOT NULL, request TEXT NOT NULL,"
      " response TEXT, created REAL NOT NULL, PRIMARY KEY (run, seq)) WITHOUT ROWID;";
  return exec(a, sql, "creating the schema (version 1)", err);
}

/* migrations[i] takes the schema from version i to version i + 1, inside the caller's
 * transaction. A new version adds its function here and bumps KEVO_ARCHIVE_SCHEMA. */
static int (*const migrations[])(kevo_archive *, kevo_error *) = {migrate_to_1};
_Static_assert(sizeof migrations / sizeof migrations[0] == KEVO_ARCHIVE_SCHEMA,
               "one migration per schema version");

/* The schema version in the file: 0 for an empty file; KEVO_E_DB for a database that is not
 * a kevo archive. */
static int schema_version(kevo_archive *a, int64_t *version, kevo_error *err) {
  int64_t app_id, tables, has_meta;
  int rc = query_int(a, "PRAGMA application_id", 0, &app_id, "reading its header", err);
  if (!rc)
    rc = query_int(a, "SELECT count(*) FROM sqlite_schema WHERE type = 'table'", 0, &tables,
                   "reading its schema", err);
  if (!rc)
    rc = query_int(a, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'meta'",
                   0, &has_meta, "reading its schema", err);
  if (rc) return rc;
  *version = 0;
  if (tables == 0 && app_id == 0) return KEVO_OK;
  if (app_id != KEVO_APPLICATION_ID || !has_meta)
    return kevo_fail(err, KEVO_E_DB,
                     "archive %s: this SQLite database is not a kevo archive (it belongs to "
                     "another program): pick another file with --db or KEVO_DB",
                     a->path);
  return query_int(a, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'schema_version'", 0,
                   version, "reading its schema version", err);
}

/* Brings the schema to KEVO_ARCHIVE_SCHEMA in one transaction (another process may have done
 * it while we waited for the lock: the version is read again inside). */
static int migrate(kevo_archive *a, kevo_error *err) {
  int rc = exec(a, "BEGIN IMMEDIATE", "locking it to upgrade its schema", err);
  if (rc) return rc;
  int64_t v;
  rc = schema_version(a, &v, err);
  if (!rc && v == 0)
    rc = exec(a, "PRAGMA application_id = 1801811567", "stamping it as a kevo archive", err);
  for (int64_t i = v; !rc && i < KEVO_ARCHIVE_SCHEMA; i++)
    rc = migrations[i](a, err);
  if (!rc && v < KEVO_ARCHIVE_SCHEMA) {
    char sql[128];
    snprintf(sql, sizeof sql,
             "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', '%d')",
             KEVO_ARCHIVE_SCHEMA);
    rc = exec(a, sql, "recording its schema version", err);
  }
  if (!rc) return exec(a, "COMMIT", "committing its schema upgrade", err);
  sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

static int quick_check(kevo_archive *a, kevo_error *err) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(a->db, "PRAGMA quick_check(1)", -1, &st, NULL);
  if (rc) return db_fail(a, err, rc, "checking its integrity");
  rc = sqlite3_step(st);
  int status = KEVO_OK;
  if (rc != SQLITE_ROW) {
    status = db_fail(a, err, rc, "checking its integrity");
  } else {
    const char *res = (const char *)sqlite3_column_text(st, 0);
    if (!res || strcmp(res, "ok") != 0)
      status = kevo_fail(err, KEVO_E_DB, "archive %s failed its integrity check (%s); %s", a->path,
                         res ? res : "no answer", db_hint(SQLITE_CORRUPT));
  }
  sqlite3_finalize(st);
  return status;
}

/* --- open and close ------------------------------------------------------------------------- */

/* "file:PATH?immutable=1" with PATH percent-encoded where a URI needs it. */
static void immutable_uri(const char *path, char *out, size_t n) {
  size_t k = (size_t)snprintf(out, n, "file:");
  for (const unsigned char *p = (const unsigned char *)path; *p && k + 4 < n; p++) {
    if (*p == '%' || *p == '?' || *p == '#' || *p < 0x21 || *p >= 0x7f)
      k += (size_t)snprintf(out + k, n - k, "%%%02X", *p);
    else
      out[k++] = (char)*p;
  }
  snprintf(out + k, n - k, "?immutable=1");
}

const char *kevo_archive_default_path(void) {
  const char *p = getenv("KEVO_DB");
  return p && *p ? p : KEVO_ARCHIVE_DEFAULT;
}

/* WAL lets readers (kevo show) read while a run writes, and makes a commit one append. */
static int set_wal(kevo_archive *a, kevo_error *err) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(a->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
  if (rc) return db_fail(a, err, rc, "switching it to WAL mode");
  rc = sqlite3_step(st);
  int status = KEVO_OK;
  if (rc != SQLITE_ROW)
    status = db_fail(a, err, rc, "switching it to WAL mode");
  else if (strcmp((const char *)sqlite3_column_text(st, 0), "wal") != 0)
    status = kevo_fail(err, KEVO_E_DB, "archive %s: cannot use WAL mode on it (got %s); %s",
                       a->path, sqlite3_column_text(st, 0), db_hint(SQLITE_CANTOPEN));
  sqlite3_finalize(st);
  return status;
}

/* Opens a->path (or, for reading, uri when not NULL) and checks what it holds. */
static int open_checked(kevo_archive *a, const kevo_archive_opts *o, const char *uri,
                        kevo_error *err) {
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (o->readonly ? 0 : SQLITE_OPEN_CREATE);
  int rc = sqlite3_open_v2(a->path, &a->db, flags, NULL);
  if (!rc && uri) {
    sqlite3_close_v2(a->db);
    a->db = NULL;
    rc = sqlite3_open_v2(uri, &a->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
  }
  if (rc) return db_fail(a, err, rc, "opening it");
  sqlite3_extended_result_codes(a->db, 1);
  sqlite3_busy_timeout(a->db, a->busy_ms);
  if (!o->readonly && sqlite3_db_readonly(a->db, "main") == 1)
    return kevo_fail(err, KEVO_E_DB, "archive %s is read-only; %s", a->path,
                     db_hint(SQLITE_READONLY));
  int64_t v;
  if ((rc = exec(a, "PRAGMA foreign_keys = ON", "enabling foreign keys", err)) ||
      (rc = schema_version(a, &v, err)))
    return rc;
  a->schema_found = (int)v;
  if (v > KEVO_ARCHIVE_SCHEMA)
    return kevo_fail(err, KEVO_E_DB,
                     "archive %s was written by a newer kevo (schema version %d; this kevo %s "
                     "knows up to %d): upgrade kevo, or use another --db",
                     a->path, (int)v, KEVO_VERSION, KEVO_ARCHIVE_SCHEMA);
  if (!o->no_check && v > 0 && (rc = quick_check(a, err))) return rc;
  if (o->readonly) {
    if (v < KEVO_ARCHIVE_SCHEMA)
      return kevo_fail(err, KEVO_E_DB,
                       "archive %s has schema version %d, older than this kevo's %d (or is "
                       "empty): a command that writes (kevo run) upgrades it",
                       a->path, (int)v, KEVO_ARCHIVE_SCHEMA);
    return KEVO_OK;
  }
  const char *sync = o->sync_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL";
  if ((rc = set_wal(a, err)) || (rc = exec(a, sync, "setting its sync mode", err))) return rc;
  return v < KEVO_ARCHIVE_SCHEMA ? migrate(a, err) : KEVO_OK;
}

/* May this process write both path and its directory (what a WAL reader needs for FILE-shm)? */
static int may_write(const char *path) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else
    slash[slash == dir] = '\0'; /* "/x.db" -> "/" */
  return access(path, W_OK) == 0 && access(dir, W_OK) == 0;
}

int kevo_archive_open(const char *path, const kevo_archive_opts *opts, kevo_archive **out,
                      kevo_error *err) {
  static const kevo_archive_opts defaults = {0};
  const kevo_archive_opts *o = opts ? opts : &defaults;
  *out = NULL;
  if (!path || !*path) return kevo_fail(err, KEVO_E_ARG, "archive: empty path");
  if (strlen(path) >= sizeof((kevo_archive *)0)->path)
    return kevo_fail(err, KEVO_E_ARG, "archive: path too long");
  struct stat sb;
  if (o->readonly && stat(path, &sb) != 0)
    return kevo_fail(err, KEVO_E_DB, "archive %s: %s (no run has been recorded there yet)", path,
                     strerror(errno));
  if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
    return kevo_fail(err, KEVO_E_DB, "archive %s is a directory: name a file", path);
  kevo_archive *a = calloc(1, sizeof *a);
  if (!a) return kevo_fail(err, KEVO_E_NOMEM, "archive: out of memory");
  snprintf(a->path, sizeof a->path, "%s", path);
  a->readonly = o->readonly;
  a->busy_ms = o->busy_ms > 0 ? o->busy_ms : KEVO_ARCHIVE_BUSY_MS;
  /* Reading a WAL archive needs FILE-shm, which a read-only directory or file may not allow,
   * and where the directory allows it SQLite makes FILE-wal and FILE-shm that a reader cannot
   * remove. With no FILE-wal holding commits, the file alone is the whole archive: a reader
   * that may not write the file or its directory reads it immutable, leaving nothing behind. */
  char wal[sizeof a->path + 8], uri[3 * sizeof a->path + 32];
  snprintf(wal, sizeof wal, "%s-wal", path);
  int no_wal = stat(wal, &sb) != 0 || sb.st_size == 0;
  int rc;
  if (o->readonly && no_wal && !may_write(path)) {
    immutable_uri(path, uri, sizeof uri);
    rc = open_checked(a, o, uri, err);
  } else {
    rc = open_checked(a, o, NULL, err);
  }
  int ro_failure = (a->last_rc & 0xff) == SQLITE_READONLY || (a->last_rc & 0xff) == SQLITE_CANTOPEN;
  if (rc && o->readonly && ro_failure && no_wal) { /* a directory that changed under us */
    sqlite3_close_v2(a->db);
    a->db = NULL;
    immutable_uri(path, uri, sizeof uri);
    rc = open_checked(a, o, uri, err);
  }
  if (rc) {
    kevo_archive_close(a);
    return rc;
  }
  *out = a;
  return KEVO_OK;
}

void kevo_archive_close(kevo_archive *a) {
  if (!a) return;
  for (int i = 0; i < ST_COUNT; i++)
    sqlite3_finalize(a->st[i]);
  sqlite3_close_v2(a->db);
  free(a);
}

const char *kevo_archive_path(const kevo_archive *a) {
  return a->path;
}

int kevo_archive_schema_found(const kevo_archive *a) {
  return a->schema_found;
}

/* --- writes --------------------------------------------------------------------------------- */

static int need(const char *s, const char *what, kevo_error *err) {
  return s && *s ? KEVO_OK : kevo_fail(err, KEVO_E_ARG, "archive: %s is required", what);
}

static int writable(kevo_archive *a, kevo_error *err) {
  return a->readonly ? kevo_fail(err, KEVO_E_ARG, "archive %s was opened read-only", a->path)
                     : KEVO_OK;
}

int kevo_archive_run_create(kevo_archive *a, const kevo_run_spec *s, int64_t *id, kevo_error *err) {
  sqlite3_stmt *st;
  int rc;
  if ((rc = writable(a, err)) || (rc = stmt(a, ST_RUN_CREATE, &st, err))) return rc;
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  sqlite3_bind_double(st, 1, now_s());
  bind_text(st, 2, s->recipe, 0);
  bind_text(st, 3, s->recipe_path, 0);
  bind_text(st, 4, s->recipe_hash, 0);
  bind_text(st, 5, s->strategy, 0);
  bind_text(st, 6, s->config, 0);
  if (s->has_seed) sqlite3_bind_int64(st, 7, s->seed);
  bind_text(st, 8, KEVO_VERSION, 0);
  bind_text(st, 9, KEVO_GIT, 0);
  bind_text(st, 10, host[0] ? host : NULL, 0);
  return write_stmt(a, st, id, "recording a new run", err);
}

int kevo_archive_run_finish(kevo_archive *a, int64_t run, const char *status, kevo_error *err) {
  if (!status || (strcmp(status, "done") && strcmp(status, "failed") && strcmp(status, "killed")))
    return kevo_fail(err, KEVO_E_ARG, "archive: run status must be done, failed or killed, not %s",
                     status ? status : "(none)");
  sqlite3_stmt *st;
  int rc;
  if ((rc = writable(a, err)) || (rc = stmt(a, ST_RUN_FINISH, &st, err))) return rc;
  sqlite3_bind_int64(st, 1, run);
  bind_text(st, 2, status, 0);
  sqlite3_bind_double(st, 3, now_s());
  rc = write_stmt(a, st, NULL, "finishing a run", err);
  if (!rc && sqlite3_changes(a->db) != 1)
    return kevo_fail(err, KEVO_E_ARG, "archive %s: no run %lld", a->path, (long long)run);
  return rc;
}

int kevo_archive_run_reopen(kevo_archive *a, int64_t run, kevo_error *err) {
  sqlite3_stmt *st;
  int rc;
  if ((rc = writable(a, err)) || (rc = stmt(a, ST_RUN_REOPEN, &st, err))) return rc;
  sqlite3_bind_int64(st, 1, run);
  rc = write_stmt(a, st, NULL, "reopening a run", err);
  if (!rc && sqlite3_changes(a->db) != 1)
    return kevo_fail(err, KEVO_E_ARG, "archive %s: no run %lld", a->path, (long long)run);
  return rc;
}

int kevo_archive_begin(kevo_archive *a, kevo_error *err) {
  int rc = writable(a, err);
  return rc ? rc : exec(a, "BEGIN IMMEDIATE", "starting a transaction", err);
}

int kevo_archive_commit(kevo_archive *a, kevo_error *err) {
  return exec(a, "COMMIT", "committing a transaction", err);
}

void kevo_archive_rollback(kevo_archive *a) {
  if (!sqlite3_get_autocommit(a->db)) sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
}

int kevo_archive_candidate_add(kevo_archive *a, const kevo_candidate_spec *s, int64_t *id,
                               kevo_error *err) {
  int rc;
  if ((rc = writable(a, err)) || (rc = need(s->origin, "a candidate's origin", err)) ||
      (rc = need(s->lang, "a candidate's lang", err)) ||
      (rc = need(s->source, "a candidate's source", err)))
    return rc;
  sqlite3_stmt *st;
  int src = stmt(a, ST_CANDIDATE_ADD, &st, err);
  if (src) return src;
  size_t len = s->source_len ? s->source_len : strlen(s->source);
  char hash[KEVO_HASH_HEX];
  kevo_sha256_hex(s->source, len, hash);
  sqlite3_bind_int64(st, 1, s->run);
  bind_id(st, 2, s->parent);
  bind_text(st, 3, s->origin, 0);
  bind_text(st, 4, s->lang, 0);
  bind_text(st, 5, s->source, len);
  bind_text(st, 6, hash, 0);
  bind_text(st, 7, s->launch, 0);
  bind_text(st, 8, s->knobs, 0);
  sqlite3_bind_double(st, 9, now_s());
  return write_stmt(a, st, id, "adding a candidate (is its run, or parent, in the archive?)", err);
}

int kevo_archive_eval_add(kevo_archive *a, const kevo_eval_spec *s, int64_t *id, kevo_error *err) {
  int rc;
  if ((rc = writable(a, err)) || (rc = need(s->stage, "an evaluation's stage", err)) ||
      (rc = need(s->verdict, "an evaluation's verdict", err)))
    return rc;
  sqlite3_stmt *st;
  int src = stmt(a, ST_EVAL_ADD, &st, err);
  if (src) return src;
  sqlite3_bind_int64(st, 1, s->candidate);
  bind_text(st, 2, s->stage, 0);
  bind_text(st, 3, s->verdict, 0);
  sqlite3_bind_int(st, 4, s->ok ? 1 : 0);
  bind_real(st, 5, s->speedup);
  bind_real(st, 6, s->median_ms);
  bind_text(st, 7, s->result, 0);
  bind_text(st, 8, s->fingerprint, 0);
  sqlite3_bind_double(st, 9, now_s());
  rc = write_stmt(a, st, id, "adding an evaluation", err);
  if (!rc && sqlite3_changes(a->db) != 1)
    return kevo_fail(err, KEVO_E_ARG, "archive %s: no candidate %lld", a->path,
                     (long long)s->candidate);
  return rc;
}

int kevo_archive_llm_call_add(kevo_archive *a, const kevo_llm_call_spec *s, int64_t *id,
                              kevo_error *err) {
  int rc;
  if ((rc = writable(a, err)) || (rc = need(s->request, "an LLM call's request", err))) return rc;
  sqlite3_stmt *st;
  int src = stmt(a, ST_LLM_ADD, &st, err);
  if (src) return src;
  size_t len = s->request_len ? s->request_len : strlen(s->request);
  char hash[KEVO_HASH_HEX];
  kevo_sha256_hex(s->request, len, hash);
  bind_id(st, 1, s->run);
  bind_text(st, 2, s->provider, 0);
  bind_text(st, 3, s->model, 0);
  bind_text(st, 4, hash, 0);
  bind_text(st, 5, s->request, len);
  bind_text(st, 6, s->response, s->response_len); /* "" stays "", not NULL */
  if (s->http_status) sqlite3_bind_int(st, 7, s->http_status);
  sqlite3_bind_int64(st, 8, s->input_tokens);
  sqlite3_bind_int64(st, 9, s->output_tokens);
  bind_real(st, 10, s->cost);
  bind_real(st, 11, s->ms);
  bind_text(st, 12, s->error, 0);
  sqlite3_bind_double(st, 13, now_s());
  return write_stmt(a, st, id, "recording an LLM call (is its run in the archive?)", err);
}

int kevo_archive_journal_append(kevo_archive *a, int64_t run, const char *kind, const char *request,
                                size_t request_len, const char *response, size_t response_len,
                                int64_t *seq, kevo_error *err) {
  int rc;
  if ((rc = writable(a, err)) || (rc = need(kind, "a journal entry's kind", err))) return rc;
  if (!request) return kevo_fail(err, KEVO_E_ARG, "archive: a journal entry needs a request");
  sqlite3_stmt *st;
  int src = stmt(a, ST_JOURNAL_APPEND, &st, err);
  if (src) return src;
  sqlite3_bind_int64(st, 1, run);
  bind_text(st, 2, kind, 0);
  sqlite3_bind_text64(st, 3, request, request_len ? request_len : strlen(request), SQLITE_STATIC,
                      SQLITE_UTF8);
  if (response)
    sqlite3_bind_text64(st, 4, response, response_len ? response_len : strlen(response),
                        SQLITE_STATIC, SQLITE_UTF8);
  sqlite3_bind_double(st, 5, now_s());
  return write_stmt(a, st, seq, "appending to the journal (is its run in the archive?)", err);
}

/* --- reads ---------------------------------------------------------------------------------- */

int kevo_archive_runs(kevo_archive *a, kevo_row_fn fn, void *ud, kevo_error *err) {
  sqlite3_stmt *st;
  int rc = stmt(a, ST_RUNS, &st, err);
  return rc ? rc : read_rows(a, st, fn, ud, NULL, "listing runs", err);
}

int kevo_archive_run(kevo_archive *a, int64_t run, kevo_row_fn fn, void *ud, int *found,
                     kevo_error *err) {
  sqlite3_stmt *st;
  int rc = stmt(a, ST_RUNS, &st, err);
  if (rc) return rc;
  sqlite3_bind_int64(st, 1, run);
  return read_rows(a, st, fn, ud, found, "reading a run", err);
}

static int read_by(kevo_archive *a, int id, int64_t key, int64_t limit, kevo_row_fn fn, void *ud,
                   int *found, const char *doing, kevo_error *err) {
  sqlite3_stmt *st;
  int rc = stmt(a, id, &st, err);
  if (rc) return rc;
  sqlite3_bind_int64(st, 1, key);
  if (limit) sqlite3_bind_int64(st, 2, limit);
  return read_rows(a, st, fn, ud, found, doing, err);
}

int kevo_archive_candidates(kevo_archive *a, int64_t run, kevo_row_fn fn, void *ud,
                            kevo_error *err) {
  return read_by(a, ST_CANDIDATES, run, 0, fn, ud, NULL, "listing candidates", err);
}

int kevo_archive_evaluations(kevo_archive *a, int64_t candidate, int64_t run, kevo_row_fn fn,
                             void *ud, kevo_error *err) {
  if (candidate > 0)
    return read_by(a, ST_EVALS_CANDIDATE, candidate, 0, fn, ud, NULL, "listing evaluations", err);
  return read_by(a, ST_EVALS_RUN, run, 0, fn, ud, NULL, "listing evaluations", err);
}

int kevo_archive_best(kevo_archive *a, int64_t run, kevo_row_fn fn, void *ud, int *found,
                      kevo_error *err) {
  return read_by(a, ST_BEST, run, 0, fn, ud, found, "finding the best evaluation", err);
}

int kevo_archive_top(kevo_archive *a, int64_t run, int limit, kevo_row_fn fn, void *ud,
                     kevo_error *err) {
  return read_by(a, ST_TOP, run, limit > 0 ? limit : -1, fn, ud, NULL, "ranking candidates", err);
}

int kevo_archive_verdicts(kevo_archive *a, int64_t run, kevo_row_fn fn, void *ud, kevo_error *err) {
  return read_by(a, ST_VERDICTS, run, 0, fn, ud, NULL, "counting verdicts", err);
}

int kevo_archive_llm_calls(kevo_archive *a, int64_t run, kevo_row_fn fn, void *ud,
                           kevo_error *err) {
  return read_by(a, ST_LLM_CALLS, run, 0, fn, ud, NULL, "listing LLM calls", err);
}

int kevo_archive_llm_call_lookup(kevo_archive *a, const char *request, size_t request_len,
                                 kevo_row_fn fn, void *ud, int *found, kevo_error *err) {
  sqlite3_stmt *st;
  int src = stmt(a, ST_LLM_LOOKUP, &st, err);
  if (src) return src;
  size_t len = request_len ? request_len : strlen(request);
  char hash[KEVO_HASH_HEX];
  kevo_sha256_hex(request, len, hash);
  bind_text(st, 1, hash, 0);
  sqlite3_bind_text64(st, 2, request, len, SQLITE_STATIC, SQLITE_UTF8);
  return read_rows(a, st, fn, ud, found, "looking up an LLM call", err);
}

int kevo_archive_llm_call_next(kevo_archive *a, const char *request, size_t request_len,
                               int64_t run, int64_t after, int64_t upto, kevo_row_fn fn, void *ud,
                               int *found, kevo_error *err) {
  sqlite3_stmt *st;
  int src = stmt(a, ST_LLM_NEXT, &st, err);
  if (src) return src;
  size_t len = request_len ? request_len : strlen(request);
  char hash[KEVO_HASH_HEX];
  kevo_sha256_hex(request, len, hash);
  bind_text(st, 1, hash, 0);
  sqlite3_bind_text64(st, 2, request, len, SQLITE_STATIC, SQLITE_UTF8);
  sqlite3_bind_int64(st, 3, run);
  sqlite3_bind_int64(st, 4, after);
  sqlite3_bind_int64(st, 5, upto);
  return read_rows(a, st, fn, ud, found, "looking up an LLM call", err);
}

int kevo_archive_journal_get(kevo_archive *a, int64_t run, int64_t seq, kevo_row_fn fn, void *ud,
                             int *found, kevo_error *err) {
  return read_by(a, ST_JOURNAL_GET, run, seq, fn, ud, found, "reading the journal", err);
}

int kevo_archive_journal_count(kevo_archive *a, int64_t run, int64_t *n, kevo_error *err) {
  sqlite3_stmt *st;
  int src = stmt(a, ST_JOURNAL_COUNT, &st, err);
  if (src) return src;
  sqlite3_bind_int64(st, 1, run);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) *n = sqlite3_column_int64(st, 0);
  int status = rc == SQLITE_ROW ? KEVO_OK : db_fail(a, err, rc, "reading the journal");
  done(st);
  return status;
}
