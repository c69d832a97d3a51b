/* The archive core on real SQLite files: round trips of every table, journal numbering, schema
 * versions, corrupt/truncated/foreign/read-only/locked files. */
#include "archive.h"
#include "check.h"

#include <sqlite3.h>

#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];

static const char *tmp_path(const char *name) {
  static char p[4][512];
  static int k;
  k = (k + 1) % 4;
  snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
  return p[k];
}

static void raw_exec(const char *path, const char *sql) {
  sqlite3 *db;
  CHECK(sqlite3_open(path, &db) == SQLITE_OK);
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    fprintf(stderr, "raw_exec %s: %s\n", sql, msg);
    check_failures++;
  }
  sqlite3_free(msg);
  sqlite3_close(db);
}

static kevo_archive *open_ok(const char *path) {
  kevo_archive *a = NULL;
  kevo_error err = {0};
  int rc = kevo_archive_open(path, NULL, &a, &err);
  if (rc) fprintf(stderr, "open %s: %s\n", path, err.msg);
  CHECK(rc == KEVO_OK && a);
  return a;
}

/* Captures a row's columns for the checks: a copy of the whole row as JSON-ish text isn't
 * needed; the tests read the fields they want through these. */
struct cap {
  int n;
  int64_t id, seq, ok, candidate, run, parent;
  double speedup, median_ms;
  char text[4][256];
  size_t len[4];
  int has_response;
};

static void cap_text(struct cap *c, int k, const kevo_row *r, const char *name) {
  size_t len = 0;
  const char *s = kevo_row_text(r, name, &len);
  c->len[k] = len;
  memset(c->text[k], 0, sizeof c->text[k]);
  if (s) memcpy(c->text[k], s, len < sizeof c->text[k] ? len : sizeof c->text[k] - 1);
}

static int cap_eval(void *ud, const kevo_row *r) {
  struct cap *c = ud;
  c->n++;
  c->id = kevo_row_int(r, "id", -1);
  c->candidate = kevo_row_int(r, "candidate", -1);
  c->run = kevo_row_int(r, "run", -1);
  c->ok = kevo_row_int(r, "ok", -1);
  c->speedup = kevo_row_real(r, "speedup", NAN);
  c->median_ms = kevo_row_real(r, "median_ms", NAN);
  cap_text(c, 0, r, "verdict");
  cap_text(c, 1, r, "candidate_source");
  return 0;
}

static int cap_journal(void *ud, const kevo_row *r) {
  struct cap *c = ud;
  c->n++;
  c->seq = kevo_row_int(r, "seq", -1);
  cap_text(c, 0, r, "kind");
  cap_text(c, 1, r, "request");
  cap_text(c, 2, r, "response");
  c->has_response = kevo_row_text(r, "response", NULL) != NULL;
  return 0;
}

static int cap_run(void *ud, const kevo_row *r) {
  struct cap *c = ud;
  c->n++;
  c->id = kevo_row_int(r, "id", -1);
  c->candidate = kevo_row_int(r, "candidates", -1);
  c->ok = kevo_row_int(r, "ok_evaluations", -1);
  c->seq = kevo_row_int(r, "input_tokens", -1) + kevo_row_int(r, "output_tokens", -1);
  c->speedup = kevo_row_real(r, "best_speedup", NAN);
  cap_text(c, 0, r, "status");
  cap_text(c, 1, r, "recipe");
  cap_text(c, 2, r, "kevo_version");
  cap_text(c, 3, r, "config");
  return 0;
}

static int cap_candidate(void *ud, const kevo_row *r) {
  struct cap *c = ud;
  c->n++;
  c->id = kevo_row_int(r, "id", -1);
  c->parent = kevo_row_int(r, "parent", 0);
  cap_text(c, 0, r, "source_hash");
  cap_text(c, 1, r, "source");
  cap_text(c, 2, r, "knobs");
  cap_text(c, 3, r, "origin");
  return 0;
}

static int cap_llm(void *ud, const kevo_row *r) {
  struct cap *c = ud;
  c->n++;
  c->id = kevo_row_int(r, "id", -1);
  cap_text(c, 0, r, "response");
  return 0;
}

static void test_round_trip(void) {
  const char *path = tmp_path("rt.db");
  kevo_archive *a = open_ok(path);
  if (!a) return;
  CHECK(kevo_archive_schema_found(a) == 0);
  kevo_error err = {0};
  int64_t run = 0, c1 = 0, c2 = 0, e = 0, l = 0;
  kevo_run_spec rs = {
      .recipe = "softmax", .strategy = "beam", .config = "{\"beam\":4}", .has_seed = 1, .seed = 7};
  CHECK(kevo_archive_run_create(a, &rs, &run, &err) == KEVO_OK && run == 1);
  kevo_candidate_spec cs = {
      .run = run, .origin = "seed", .lang = "cuda", .source = "A\nB\n", .knobs = "{\"BLOCK\":256}"};
  CHECK(kevo_archive_candidate_add(a, &cs, &c1, &err) == KEVO_OK && c1 > 0);
  cs.parent = c1;
  cs.origin = "llm";
  cs.source = "C";
  CHECK(kevo_archive_candidate_add(a, &cs, &c2, &err) == KEVO_OK && c2 == c1 + 1);
  kevo_eval_spec es = {.candidate = c1,
                       .stage = "done",
                       .verdict = "ok",
                       .ok = 1,
                       .speedup = NAN,
                       .median_ms = NAN,
                       .result = "{\"bench\":{\"speedup\":1.5,\"median_ms\":0.25}}"};
  CHECK(kevo_archive_eval_add(a, &es, &e, &err) == KEVO_OK);
  es = (kevo_eval_spec){.candidate = c2,
                        .stage = "done",
                        .verdict = "ok",
                        .ok = 1,
                        .speedup = 3.0,
                        .median_ms = 0.125};
  CHECK(kevo_archive_eval_add(a, &es, &e, &err) == KEVO_OK);
  es = (kevo_eval_spec){
      .candidate = c2, .stage = "verify", .verdict = "wrong", .speedup = NAN, .median_ms = NAN};
  CHECK(kevo_archive_eval_add(a, &es, &e, &err) == KEVO_OK);
  kevo_llm_call_spec ls = {.run = run,
                           .model = "m",
                           .request = "{\"q\":1}",
                           .response = "bad",
                           .http_status = 429,
                           .error = "rate limited",
                           .cost = NAN,
                           .ms = NAN};
  CHECK(kevo_archive_llm_call_add(a, &ls, &l, &err) == KEVO_OK);
  ls.response = "{\"a\":\"raw\"}";
  ls.http_status = 200;
  ls.error = NULL;
  ls.input_tokens = 10;
  ls.output_tokens = 5;
  int64_t l_ok = 0;
  CHECK(kevo_archive_llm_call_add(a, &ls, &l_ok, &err) == KEVO_OK && l_ok == l + 1);
  CHECK(kevo_archive_run_finish(a, run, "done", &err) == KEVO_OK);

  struct cap c = {0};
  int found = 0;
  CHECK(kevo_archive_run(a, run, cap_run, &c, &found, &err) == KEVO_OK && found == 1);
  CHECK(c.id == run && c.candidate == 2 && c.ok == 2 && c.seq == 15 && c.speedup == 3.0);
  CHECK(!strcmp(c.text[0], "done") && !strcmp(c.text[1], "softmax") && c.text[2][0]);
  CHECK(!strcmp(c.text[3], "{\"beam\":4}"));
  memset(&c, 0, sizeof c);
  CHECK(kevo_archive_run(a, 99, cap_run, &c, &found, &err) == KEVO_OK && found == 0 && !c.n);

  memset(&c, 0, sizeof c);
  CHECK(kevo_archive_candidates(a, run, cap_candidate, &c, &err) == KEVO_OK && c.n == 2);
  CHECK(c.id == c2 && c.parent == c1 && !strcmp(c.text[1], "C") && !strcmp(c.text[3], "llm"));
  CHECK(!strcmp(c.text[0], "6b23c0d5f35d1b11f9b683f0b0a617355deb11277d91ae091d399c655b87940d"));

  memset(&c, 0, sizeof c);
  CHECK(kevo_archive_evaluations(a, c1, 0, cap_eval, &c, &err) == KEVO_OK && c.n == 1);
  CHECK(c.speedup == 1.5 && c.median_ms == 0.25 && c.ok == 1 && c.run == run);
  memset(&c, 0, sizeof c);
  CHECK(kevo_archive_evaluations(a, 0, run, cap_eval, &c, &err) == KEVO_OK && c.n == 3);
  CHECK(c.ok == 0 && !strcmp(c.text[0], "wrong") && isnan(c.speedup));

  memset(&c, 0, sizeof c);
  CHECK(kevo_archive_best(a, run, cap_eval, &c, &found, &err) == KEVO_OK && found);
  CHECK(c.candidate == c2 && c.speedup == 3.0 && !strcmp(c.text[1], "C"));
  memset(&c, 0, sizeof c);
  CHECK(kevo_archive_top(a, run, 1, cap_candidate, &c, &err) == KEVO_OK && c.n == 1 && c.id == c2);

  memset(&c, 0, sizeof c);
  CHECK(kevo_archive_llm_call_lookup(a, "{\"q\":1}", 0, cap_llm, &c, &found, &err) == KEVO_OK);
  CHECK(found && c.id == l_ok && !strcmp(c.text[0], "{\"a\":\"raw\"}")); /* not the 429 */
  /* the range form: the oldest call of the run after an id, up to another, any outcome */
  ls.response = "{\"a\":\"second\"}";
  int64_t l_ok2 = 0;
  CHECK(kevo_archive_llm_call_add(a, &ls, &l_ok2, &err) == KEVO_OK && l_ok2 == l_ok + 1);
  memset(&c, 0, sizeof c);
  CHECK(kevo_archive_llm_call_next(a, "{\"q\":1}", 0, run, l, l_ok2, cap_llm, &c, &found, &err) ==
        KEVO_OK);
  CHECK(found && c.id == l_ok && !strcmp(c.text[0], "{\"a\":\"raw\"}"));
  CHECK(kevo_archive_llm_call_next(a, "{\"q\":1}", 0, run, l_ok, l_ok2, cap_llm, &c, &found,
                                   &err) == KEVO_OK);
  CHECK(found && c.id == l_ok2);
  CHECK(kevo_archive_llm_call_next(a, "{\"q\":1}", 0, run, l_ok2, 1000, cap_llm, &c, &found,
                                   &err) == KEVO_OK);
  CHECK(found == 0);
  CHECK(kevo_archive_llm_call_next(a, "{\"q\":1}", 0, run, 0, l_ok - 1, cap_llm, &c, &found,
                                   &err) == KEVO_OK);
  CHECK(found && c.id == l); /* the 429 too: the range form returns every outcome */
  CHECK(kevo_archive_llm_call_next(a, "{\"q\":1}", 0, run + 1, 0, 1000, cap_llm, &c, &found,
                                   &err) == KEVO_OK);
  CHECK(found == 0); /* another run's */
  CHECK(kevo_archive_llm_call_lookup(a, "{\"q\":2}", 0, cap_llm, &c, &found, &err) == KEVO_OK);
  CHECK(found == 0);
  kevo_archive_close(a);

  a = open_ok(path); /* and again from the file */
  if (!a) return;
  CHECK(kevo_archive_schema_found(a) == KEVO_ARCHIVE_SCHEMA);
  memset(&c, 0, sizeof c);
  CHECK(kevo_archive_runs(a, cap_run, &c, &err) == KEVO_OK && c.n == 1 && c.speedup == 3.0);
  kevo_archive_close(a);
}

static void test_misuse(void) {
  kevo_archive *a = open_ok(tmp_path("misuse.db"));
  if (!a) return;
  kevo_error err = {0};
  int64_t run = 0, id = 0;
  kevo_run_spec rs = {.recipe = "r"};
  CHECK(kevo_archive_run_create(a, &rs, &run, &err) == KEVO_OK);
  CHECK(kevo_archive_run_finish(a, run, "great", &err) == KEVO_E_ARG);
  CHECK(kevo_archive_run_finish(a, run + 1, "done", &err) == KEVO_E_ARG);
  CHECK_STR_CONTAINS(err.msg, "no run");
  kevo_candidate_spec cs = {.run = run + 1, .origin = "seed", .lang = "cuda", .source = "x"};
  CHECK(kevo_archive_candidate_add(a, &cs, &id, &err) == KEVO_E_ARG); /* foreign key */
  cs.run = run;
  cs.knobs = "{not json";
  CHECK(kevo_archive_candidate_add(a, &cs, &id, &err) == KEVO_E_ARG);
  CHECK_STR_CONTAINS(err.msg, "knobs_is_json");
  cs.knobs = NULL;
  cs.lang = NULL;
  CHECK(kevo_archive_candidate_add(a, &cs, &id, &err) == KEVO_E_ARG);
  cs.lang = "cuda";
  CHECK(kevo_archive_candidate_add(a, &cs, &id, &err) == KEVO_OK);
  kevo_eval_spec es = {.candidate = id,
                       .stage = "done",
                       .verdict = "wrong",
                       .ok = 1,
                       .speedup = NAN,
                       .median_ms = NAN};
  CHECK(kevo_archive_eval_add(a, &es, &id, &err) == KEVO_E_ARG); /* ok needs verdict ok */
  es.candidate = 12345;
  es.ok = 0;
  CHECK(kevo_archive_eval_add(a, &es, &id, &err) == KEVO_E_ARG);
  CHECK_STR_CONTAINS(err.msg, "no candidate 12345");
  int64_t seq;
  CHECK(kevo_archive_journal_append(a, 999, "llm", "q", 0, NULL, 0, &seq, &err) == KEVO_E_ARG);
  kevo_run_spec bad = {.config = "[1,"};
  CHECK(kevo_archive_run_create(a, &bad, &run, &err) == KEVO_E_ARG);
  kevo_archive_close(a);
}

static void test_journal(void) {
  kevo_archive *a = open_ok(tmp_path("journal.db"));
  if (!a) return;
  kevo_error err = {0};
  int64_t r1 = 0, r2 = 0, seq = 0;
  kevo_run_spec rs = {0};
  CHECK(kevo_archive_run_create(a, &rs, &r1, &err) == KEVO_OK);
  CHECK(kevo_archive_run_create(a, &rs, &r2, &err) == KEVO_OK);
  static const char bin[] = {'a', 0, 'b', '\n', (char)0xff, 'z'}; /* bytes, NUL included */
  int bad = 0;
  for (int i = 1; i <= 200; i++) {
    char req[32];
    snprintf(req, sizeof req, "req %d", i);
    int64_t run = i % 3 ? r1 : r2;
    int rc = kevo_archive_journal_append(a, run, "llm", req, 0, i == 50 ? bin : req,
                                         i == 50 ? sizeof bin : 0, &seq, &err);
    int64_t want = i % 3 ? i - i / 3 : i / 3;
    if (rc || seq != want) bad++;
  }
  CHECK(bad == 0);
  int64_t n1 = 0, n2 = 0;
  CHECK(kevo_archive_journal_count(a, r1, &n1, &err) == KEVO_OK && n1 == 134);
  CHECK(kevo_archive_journal_count(a, r2, &n2, &err) == KEVO_OK && n2 == 66);
  bad = 0;
  for (int64_t s = 1; s <= n1; s++) {
    struct cap c = {0};
    int found = 0;
    if (kevo_archive_journal_get(a, r1, s, cap_journal, &c, &found, &err) || !found || c.seq != s ||
        strcmp(c.text[0], "llm"))
      bad++;
  }
  CHECK(bad == 0);
  struct cap c = {0};
  int found = 0;
  /* i = 50 is run r1's entry 34 (50 - 16) */
  CHECK(kevo_archive_journal_get(a, r1, 34, cap_journal, &c, &found, &err) == KEVO_OK && found);
  CHECK(!strcmp(c.text[1], "req 50") && c.len[2] == sizeof bin &&
        !memcmp(c.text[2], bin, sizeof bin));
  CHECK(kevo_archive_journal_get(a, r1, 135, cap_journal, &c, &found, &err) == KEVO_OK && !found);
  CHECK(kevo_archive_journal_append(a, r2, "eval", "q", 0, NULL, 0, &seq, &err) == KEVO_OK &&
        seq == 67);
  memset(&c, 0, sizeof c);
  CHECK(kevo_archive_journal_get(a, r2, 67, cap_journal, &c, &found, &err) == KEVO_OK && found);
  CHECK(!c.has_response && !strcmp(c.text[0], "eval"));
  kevo_archive_close(a);
}

static int open_fails(const char *path, const kevo_archive_opts *o, kevo_error *err) {
  kevo_archive *a = NULL;
  int rc = kevo_archive_open(path, o, &a, err);
  CHECK(a == NULL || rc == KEVO_OK);
  kevo_archive_close(a);
  return rc;
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  CHECK(fwrite(data, 1, n, f) == n);
  fclose(f);
}

static void test_bad_files(void) {
  kevo_error err = {0};
  /* garbage */
  char junk[8192];
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = (char)(i * 7919 % 251);
  const char *garbage = tmp_path("garbage.db");
  write_file(garbage, junk, sizeof junk);
  CHECK(open_fails(garbage, NULL, &err) == KEVO_E_DB);
  CHECK_STR_CONTAINS(err.msg, garbage);
  CHECK_STR_CONTAINS(err.msg, "not an SQLite database");

  /* a kevo archive whose pages were cut off */
  const char *trunc = tmp_path("trunc.db");
  kevo_archive *a = open_ok(trunc);
  if (!a) return;
  int64_t run = 0, id = 0;
  kevo_run_spec rs = {0};
  kevo_archive_run_create(a, &rs, &run, &err);
  char src[3000];
  memset(src, 'x', sizeof src - 1);
  src[sizeof src - 1] = 0;
  for (int i = 0; i < 300; i++) {
    kevo_candidate_spec cs = {.run = run, .origin = "seed", .lang = "cuda", .source = src};
    kevo_archive_candidate_add(a, &cs, &id, &err);
  }
  kevo_archive_close(a);
  struct stat sb;
  CHECK(stat(trunc, &sb) == 0 && sb.st_size > 200000);
  CHECK(truncate(trunc, sb.st_size / 2) == 0);
  CHECK(open_fails(trunc, NULL, &err) == KEVO_E_DB);
  CHECK_STR_CONTAINS(err.msg, trunc);
  CHECK_STR_CONTAINS(err.msg, "corrupt");
  CHECK(truncate(trunc, 50) == 0); /* shorter than the header */
  CHECK(open_fails(trunc, NULL, &err) == KEVO_E_DB);
  CHECK_STR_CONTAINS(err.msg, "move it away");

  /* someone else's database */
  const char *other = tmp_path("other.db");
  raw_exec(other, "CREATE TABLE photos(id INTEGER PRIMARY KEY, name TEXT)");
  CHECK(open_fails(other, NULL, &err) == KEVO_E_DB);
  CHECK_STR_CONTAINS(err.msg, "not a kevo archive");

  /* a kevo archive from a newer kevo */
  const char *newer = tmp_path("newer.db");
  kevo_archive_close(open_ok(newer));
  raw_exec(newer, "UPDATE meta SET value = '99' WHERE key = 'schema_version'");
  CHECK(open_fails(newer, NULL, &err) == KEVO_E_DB);
  CHECK_STR_CONTAINS(err.msg, "newer kevo");
  CHECK_STR_CONTAINS(err.msg, "schema version 99");

  /* reading a file that is not there, a directory */
  kevo_archive_opts ro = {.readonly = 1};
  CHECK(open_fails(tmp_path("absent.db"), &ro, &err) == KEVO_E_DB);
  CHECK(access(tmp_path("absent.db"), F_OK) != 0); /* a reader never creates */
  CHECK(open_fails(dir, NULL, &err) == KEVO_E_DB);
  CHECK_STR_CONTAINS(err.msg, "directory");
  CHECK(open_fails(tmp_path("no/such/dir/k.db"), NULL, &err) == KEVO_E_DB);
}

/* Read-only file and directory. Root ignores permissions, so as root the checks run in a child
 * that has become nobody. */
static void test_readonly(void) {
  const char *rodir = tmp_path("ro");
  CHECK(mkdir(rodir, 0755) == 0);
  char rofile[600], inro[600];
  snprintf(rofile, sizeof rofile, "%s/file.db", dir);
  snprintf(inro, sizeof inro, "%s/k.db", rodir);
  kevo_archive_close(open_ok(rofile));
  kevo_archive_close(open_ok(inro));
  /* the file in the read-only directory is writable itself: the directory is what stops it */
  CHECK(chmod(rofile, 0444) == 0 && chmod(inro, 0666) == 0 && chmod(rodir, 0555) == 0 &&
        chmod(dir, 0755) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    if (geteuid() == 0 && (setgid(65534) || setuid(65534))) _exit(3);
    kevo_error err = {0};
    int bad = 0;
    bad |= open_fails(rofile, NULL, &err) != KEVO_E_DB || !strstr(err.msg, "read-only") ||
           !strstr(err.msg, rofile);
    bad |= (open_fails(inro, NULL, &err) != KEVO_E_DB || !strstr(err.msg, "write access")) << 1;
    kevo_archive_opts ro = {.readonly = 1};
    kevo_archive *a = NULL;
    bad |= (kevo_archive_open(rofile, &ro, &a, &err) != KEVO_OK) << 2; /* reading is fine */
    if (a) {
      int64_t run;
      kevo_run_spec rs = {0};
      bad |= (kevo_archive_run_create(a, &rs, &run, &err) != KEVO_E_ARG) << 3;
    }
    kevo_archive_close(a);
    if (bad) fprintf(stderr, "readonly child: bad=%d last error: %s\n", bad, err.msg);
    _exit(bad ? 1 : 0);
  }
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  chmod(rodir, 0755);
}

/* A second writer waits for the first's transaction, and a lock held past the busy timeout
 * gives a clear error. */
static void test_locked(void) {
  const char *path = tmp_path("locked.db");
  kevo_archive *a = open_ok(path);
  if (!a) return;
  kevo_error err = {0};
  int64_t run = 0, seq = 0;
  kevo_run_spec rs = {0};
  CHECK(kevo_archive_run_create(a, &rs, &run, &err) == KEVO_OK);
  int pipefd[2];
  CHECK(pipe(pipefd) == 0);
  pid_t pid = fork();
  if (pid == 0) { /* holds the write lock for 600 ms */
    sqlite3 *db;
    if (sqlite3_open(path, &db) || sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL)) _exit(1);
    if (write(pipefd[1], "L", 1) != 1) _exit(1);
    usleep(600 * 1000);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(db);
    _exit(0);
  }
  char ch;
  CHECK(read(pipefd[0], &ch, 1) == 1);
  kevo_archive *impatient = NULL;
  kevo_archive_opts quick = {.busy_ms = 100};
  CHECK(kevo_archive_open(path, &quick, &impatient, &err) == KEVO_OK);
  if (impatient) {
    CHECK(kevo_archive_journal_append(impatient, run, "x", "q", 0, NULL, 0, &seq, &err) ==
          KEVO_E_DB);
    CHECK_STR_CONTAINS(err.msg, "locked");
    CHECK_STR_CONTAINS(err.msg, path);
    kevo_archive_close(impatient);
  }
  /* the default timeout outlasts the holder: this waits and succeeds */
  CHECK(kevo_archive_journal_append(a, run, "x", "q", 0, NULL, 0, &seq, &err) == KEVO_OK);
  CHECK(seq == 1);
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  close(pipefd[0]);
  close(pipefd[1]);
  kevo_archive_close(a);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/kevo-test-archive-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  test_round_trip();
  test_misuse();
  test_journal();
  test_bad_files();
  test_readonly();
  test_locked();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  CHECK_DONE();
}
