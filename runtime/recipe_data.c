/* recipe_data.c: the plain-data side of recipes (recipe.h): dtypes, default tolerances,
 * freeing, and finding a source's launch chunk (the recipe's `launch:` or a kevo:launch block
 * in the source file). */
#include "recipe.h"

#include "buf.h"

#include <stdlib.h>
#include <string.h>

static const char *const dtype_names[KEVO_DT_COUNT] = {
    "f32", "f16", "bf16", "f64", "i32", "i64", "u8", "i8", "bool", "f8e4m3", "f8e5m2"};
static const size_t dtype_sizes[KEVO_DT_COUNT] = {4, 2, 2, 8, 4, 8, 1, 1, 1, 1, 1};

int kevo_dtype_is_int(kevo_dtype dt) {
  return dt == KEVO_DT_I32 || dt == KEVO_DT_I64 || dt == KEVO_DT_U8 || dt == KEVO_DT_I8 ||
         dt == KEVO_DT_BOOL;
}

const char *kevo_dtype_name(kevo_dtype dt) {
  return (unsigned)dt < KEVO_DT_COUNT ? dtype_names[dt] : "?";
}

size_t kevo_dtype_size(kevo_dtype dt) {
  return (unsigned)dt < KEVO_DT_COUNT ? dtype_sizes[dt] : 0;
}

int kevo_dtype_parse(const char *name, kevo_dtype *out) {
  for (int k = 0; k < KEVO_DT_COUNT; k++)
    if (name && strcmp(name, dtype_names[k]) == 0) {
      *out = (kevo_dtype)k;
      return KEVO_OK;
    }
  return KEVO_E_PARSE;
}

kevo_tolerance kevo_recipe_tolerance(const kevo_recipe *r, kevo_dtype dt) {
  for (size_t k = 0; r && k < r->ntolerances; k++)
    if (r->tolerances[k].dtype == dt) return r->tolerances[k];
  /* FP8: one unit in the last place (a rounding of the same value either way), relative for
   * normal numbers, absolute (the smallest subnormal step) near zero */
  static const double atol[KEVO_DT_COUNT] = {
      [KEVO_DT_F32] = 1e-5,  [KEVO_DT_F16] = 1e-3,      [KEVO_DT_BF16] = 1e-2,
      [KEVO_DT_F64] = 1e-12, [KEVO_DT_F8E4M3] = 0x1p-9, [KEVO_DT_F8E5M2] = 0x1p-16};
  static const double rtol[KEVO_DT_COUNT] = {
      [KEVO_DT_F32] = 1e-5,  [KEVO_DT_F16] = 1e-3,     [KEVO_DT_BF16] = 1e-2,
      [KEVO_DT_F64] = 1e-12, [KEVO_DT_F8E4M3] = 0.125, [KEVO_DT_F8E5M2] = 0.25};
  int ok = (unsigned)dt < KEVO_DT_COUNT;
  return (kevo_tolerance){dt, ok ? atol[dt] : 0, ok ? rtol[dt] : 0};
}

static void source_free(kevo_source *s) {
  free(s->lang);
  free(s->file);
  free(s->kernel);
  free(s->launch);
  for (size_t k = 0; k < s->nknobs; k++) {
    for (size_t j = 0; j < s->knobs[k].nvalues; j++)
      free(s->knobs[k].values[j]);
    free(s->knobs[k].values);
    free(s->knobs[k].name);
  }
  free(s->knobs);
}

void kevo_recipe_free(kevo_recipe *r) {
  if (!r) return;
  free(r->path);
  free(r->dir);
  free(r->name);
  free(r->summary);
  for (size_t k = 0; k < r->nshapes; k++) {
    free(r->shapes[k].label);
    free(r->shapes[k].params); /* names belong to r->params */
  }
  free(r->shapes);
  for (size_t k = 0; k < r->nparams; k++)
    free(r->params[k].name);
  free(r->params);
  for (size_t k = 0; k < r->ntensors; k++) {
    kevo_tensor *t = &r->tensors[k];
    free(t->name);
    for (size_t d = 0; d < t->rank; d++)
      free(t->dims[d]);
    free(t->dims);
    free(t->init.a);
    free(t->init.b);
  }
  free(r->tensors);
  free(r->tolerances);
  free(r->cost_bytes);
  free(r->cost_flops);
  source_free(&r->reference);
  for (size_t k = 0; k < r->nseeds; k++)
    source_free(&r->seeds[k]);
  free(r->seeds);
  free(r->prompt);
  free(r->domain);
  for (size_t k = 0; k < r->nstress; k++) {
    for (size_t j = 0; j < r->stress[k].n; j++) {
      free(r->stress[k].inits[j].init.a);
      free(r->stress[k].inits[j].init.b);
    }
    free(r->stress[k].inits);
  }
  free(r->stress);
  free(r);
}

/* Finds the kevo:launch block in source text: a C comment (/\* kevo:launch ... *\/), a Python
 * string ('''kevo:launch ... ''' or """kevo:launch ... """) or Python comment lines
 * (# kevo:launch, then lines starting with #). *chunk (malloc'ed) starts right after the marker,
 * so its line 1 is the marker's line *line. Returns 1 if found, 0 if not, -1 out of memory. */
static int launch_block(const char *text, char **chunk, int *line) {
  static const char marker[] = "kevo:launch";
  for (const char *at = strstr(text, marker); at; at = strstr(at + 1, marker)) {
    const char *open = at;
    while (open > text && (open[-1] == ' ' || open[-1] == '\t'))
      open--;
    const char *body = at + strlen(marker);
    char *out = NULL;
    if (open - text >= 2 && !strncmp(open - 2, "/*", 2)) {
      const char *end = strstr(body, "*/");
      if (!end) continue;
      out = strndup(body, (size_t)(end - body));
    } else if (open - text >= 3 &&
               (!strncmp(open - 3, "'''", 3) || !strncmp(open - 3, "\"\"\"", 3))) {
      char quotes[4] = {open[-1], open[-1], open[-1], 0};
      const char *end = strstr(body, quotes);
      if (!end) continue;
      out = strndup(body, (size_t)(end - body));
    } else if (open - text >= 1 && open[-1] == '#') {
      kevo_buf b;
      kevo_buf_init(&b, 0);
      const char *p = strchr(body, '\n');
      int rc = kevo_buf_puts(&b, "\n");
      while (p && !rc) {
        p++;
        const char *q = p;
        while (*q == ' ' || *q == '\t')
          q++;
        if (*q != '#') break;
        q++;
        if (*q == ' ') q++;
        const char *nl = strchr(q, '\n');
        size_t n = nl ? (size_t)(nl - q) : strlen(q);
        rc = kevo_buf_append(&b, q, n);
        if (!rc) rc = kevo_buf_puts(&b, "\n");
        p = nl;
      }
      if (rc) {
        kevo_buf_free(&b);
        return -1;
      }
      out = kevo_buf_steal(&b, NULL);
    } else {
      continue;
    }
    if (!out) return -1;
    int n = 1;
    for (const char *q = text; q < at; q++)
      n += *q == '\n';
    *chunk = out;
    *line = n;
    return 1;
  }
  return 0;
}

int kevo_source_launch(const kevo_recipe *r, const kevo_source *s, char **chunk, const char **where,
                       int *line, kevo_error *err) {
  *chunk = NULL;
  if (s->launch) {
    if (!(*chunk = strdup(s->launch))) return kevo_fail(err, KEVO_E_NOMEM, "out of memory");
    *where = r->path;
    *line = s->launch_line;
    return KEVO_OK;
  }
  kevo_buf text;
  kevo_buf_init(&text, KEVO_TEXT_FILE_CAP);
  int rc = kevo_read_file(s->file, &text, err);
  if (rc) {
    kevo_buf_free(&text);
    return rc;
  }
  int found = launch_block(text.data, chunk, line);
  kevo_buf_free(&text);
  if (found < 0) return kevo_fail(err, KEVO_E_NOMEM, "out of memory");
  if (!found)
    return kevo_fail(err, KEVO_E_RECIPE,
                     "%s: no launch chunk (give `launch:` in the recipe or a kevo:launch block "
                     "in the source)",
                     s->file);
  *where = s->file;
  return KEVO_OK;
}
