/* archive_row.c: reading the columns of an archive row (archive.h), and a row as JSON. */
#include "archive.h"

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include <string.h>

int kevo_row_count(const kevo_row *r) {
  return sqlite3_column_count(r->st);
}

const char *kevo_row_name(const kevo_row *r, int i) {
  return sqlite3_column_name(r->st, i);
}

int kevo_row_type(const kevo_row *r, int i) {
  switch (sqlite3_column_type(r->st, i)) {
  case SQLITE_INTEGER:
    return KEVO_COL_INT;
  case SQLITE_FLOAT:
    return KEVO_COL_REAL;
  case SQLITE_NULL:
    return KEVO_COL_NULL;
  default:
    return KEVO_COL_TEXT;
  }
}

int kevo_row_find(const kevo_row *r, const char *name) {
  int n = sqlite3_column_count(r->st);
  for (int i = 0; i < n; i++)
    if (strcmp(sqlite3_column_name(r->st, i), name) == 0) return i;
  return -1;
}

int64_t kevo_row_int_at(const kevo_row *r, int i) {
  return sqlite3_column_int64(r->st, i);
}

double kevo_row_real_at(const kevo_row *r, int i) {
  return sqlite3_column_double(r->st, i);
}

const char *kevo_row_text_at(const kevo_row *r, int i, size_t *len) {
  const char *s = (const char *)sqlite3_column_text(r->st, i);
  if (len) *len = s ? (size_t)sqlite3_column_bytes(r->st, i) : 0;
  return s;
}

int64_t kevo_row_int(const kevo_row *r, const char *name, int64_t def) {
  int i = kevo_row_find(r, name);
  return i < 0 || kevo_row_type(r, i) == KEVO_COL_NULL ? def : kevo_row_int_at(r, i);
}

double kevo_row_real(const kevo_row *r, const char *name, double def) {
  int i = kevo_row_find(r, name);
  return i < 0 || kevo_row_type(r, i) == KEVO_COL_NULL ? def : kevo_row_real_at(r, i);
}

const char *kevo_row_text(const kevo_row *r, const char *name, size_t *len) {
  int i = kevo_row_find(r, name);
  if (i < 0 || kevo_row_type(r, i) == KEVO_COL_NULL) {
    if (len) *len = 0;
    return NULL;
  }
  return kevo_row_text_at(r, i, len);
}

static int is_json_column(const char *name) {
  static const char *const names[] = {"config",      "knobs",           "result",
                                      "fingerprint", "candidate_knobs", NULL};
  for (const char *const *n = names; *n; n++)
    if (strcmp(*n, name) == 0) return 1;
  return 0;
}

cJSON *kevo_row_json(const kevo_row *r) {
  cJSON *o = cJSON_CreateObject();
  for (int i = 0, n = kevo_row_count(r); o && i < n; i++) {
    const char *name = kevo_row_name(r, i);
    cJSON *v = NULL;
    switch (kevo_row_type(r, i)) {
    case KEVO_COL_NULL:
      continue;
    case KEVO_COL_INT:
      v = strcmp(name, "ok") == 0 ? cJSON_CreateBool(kevo_row_int_at(r, i) != 0)
                                  : cJSON_CreateNumber((double)kevo_row_int_at(r, i));
      break;
    case KEVO_COL_REAL:
      v = cJSON_CreateNumber(kevo_row_real_at(r, i));
      break;
    default: /* JSON columns are nested as JSON, not quoted as strings */
      if (is_json_column(name)) v = cJSON_Parse(kevo_row_text_at(r, i, NULL));
      if (!v) v = cJSON_CreateString(kevo_row_text_at(r, i, NULL));
      break;
    }
    if (!v || !cJSON_AddItemToObject(o, name, v)) {
      cJSON_Delete(v);
      cJSON_Delete(o);
      return NULL;
    }
  }
  return o;
}
