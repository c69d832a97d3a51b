/* eval_triton.c: Triton candidates in the evaluator. See eval_triton.h and docs/triton.md. */
#include "eval_triton.h"

#include <cjson/cJSON.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_ident(int c) {
  return isalnum(c) || c == '_';
}

/* Whether `def kernel(...)` in src lists a parameter named `param`. -1: no such def found. */
static int declares(const char *src, size_t len, const char *kernel, const char *param) {
  const char *end = src + len;
  size_t kl = strlen(kernel), pl = strlen(param);
  for (const char *p = src; p + 4 + kl < end; p++) {
    if (memcmp(p, "def ", 4) != 0 || (p > src && is_ident((unsigned char)p[-1]))) continue;
    const char *k = p + 4;
    while (k < end && *k == ' ')
      k++;
    if ((size_t)(end - k) <= kl || memcmp(k, kernel, kl) != 0) continue;
    const char *o = k + kl;
    while (o < end && *o == ' ')
      o++;
    if (o >= end || *o != '(') continue;
    int depth = 0;
    for (const char *c = o; c < end; c++) {
      if (*c == '(') depth++;
      if (*c == ')' && --depth == 0) break;
      if ((size_t)(end - c) > pl && !memcmp(c, param, pl) && !is_ident((unsigned char)c[-1]) &&
          !is_ident((unsigned char)c[pl]))
        return 1;
    }
    return 0;
  }
  return -1;
}

/* A knob's text as a JSON value: integer, number, boolean, else string. */
static cJSON *knob_value(const char *s) {
  char *e;
  long long i = strtoll(s, &e, 0);
  if (*s && !*e) return cJSON_CreateNumber((double)i);
  double d = strtod(s, &e);
  if (*s && !*e) return cJSON_CreateNumber(d);
  if (!strcmp(s, "true") || !strcmp(s, "True")) return cJSON_CreateTrue();
  if (!strcmp(s, "false") || !strcmp(s, "False")) return cJSON_CreateFalse();
  return cJSON_CreateString(s);
}

int evtri_prepare(const cJSON *plan, const char *src, size_t len, const kevo_define *knobs,
                  size_t nknobs, const char *(*dtype_of)(const char *, void *), void *ud,
                  evtri_prep *out, kevo_error *err) {
  memset(out, 0, sizeof *out);
  int warps = 4, stages = 3;
  for (size_t i = 0; i < nknobs; i++) {
    if (!triton_is_option(knobs[i].name)) continue;
    if (triton_option_value(knobs[i].name, knobs[i].value,
                            !strcmp(knobs[i].name, "num_warps") ? &warps : &stages, err))
      return kevo_fail_prefix(err, "knob ");
  }
  int k = 0;
  const cJSON *l;
  cJSON_ArrayForEach(l, cJSON_GetObjectItem(plan, "kernels")) {
    k++;
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(l, "name"));
    if (!name || strlen(name) >= sizeof out->jobs[0].kernel)
      return kevo_fail(err, KEVO_E_LAUNCH, "kernels[%d]: no kernel name", k);
    cJSON *sig = NULL;
    if (triton_plan_signature(l, dtype_of, ud, &sig, err))
      return kevo_fail_prefix(err, "kevo:launch: kernels[%d] ('%s'): ", k, name);
    size_t j = 0;
    while (j < out->njobs && strcmp(out->jobs[j].kernel, name))
      j++;
    if (j < out->njobs) { /* launched again: the same cubin must fit */
      int same = cJSON_Compare(sig, out->jobs[j].signature, 1);
      cJSON_Delete(sig);
      if (!same)
        return kevo_fail(err, KEVO_E_LAUNCH,
                         "kevo:launch: kernel '%s' is launched with two different argument "
                         "types; one cubin cannot take both",
                         name);
      continue;
    }
    if (out->njobs == EVTRI_MAX_JOBS) {
      cJSON_Delete(sig);
      return kevo_fail(err, KEVO_E_LAUNCH, "kevo:launch: more than %d distinct Triton kernels",
                       EVTRI_MAX_JOBS);
    }
    evtri_job *jb = &out->jobs[out->njobs++];
    snprintf(jb->kernel, sizeof jb->kernel, "%s", name);
    jb->signature = sig;
    jb->constexprs = cJSON_CreateObject();
    jb->num_warps = warps;
    jb->num_stages = stages;
  }
  if (!out->njobs) return kevo_fail(err, KEVO_E_LAUNCH, "kevo:launch: no kernels");
  for (size_t i = 0; i < nknobs; i++) {
    if (triton_is_option(knobs[i].name)) continue;
    int anywhere = 0;
    for (size_t j = 0; j < out->njobs; j++)
      anywhere |= declares(src, len, out->jobs[j].kernel, knobs[i].name) != 0;
    for (size_t j = 0; j < out->njobs; j++)
      if (!anywhere || declares(src, len, out->jobs[j].kernel, knobs[i].name) != 0)
        cJSON_AddItemToObject(out->jobs[j].constexprs, knobs[i].name,
                              knob_value(knobs[i].value ? knobs[i].value : ""));
  }
  return KEVO_OK;
}

void evtri_compile_opts(const evtri_prep *p, size_t i, const char *src, size_t len,
                        const char *name, const char *arch, triton_compile_opts *o) {
  const evtri_job *jb = &p->jobs[i];
  *o = (triton_compile_opts){.source = src,
                             .len = len,
                             .filename = name,
                             .kernel = jb->kernel,
                             .signature = jb->signature,
                             .constexprs = jb->constexprs,
                             .num_warps = jb->num_warps,
                             .num_stages = jb->num_stages,
                             .arch = arch};
}

int evtri_finish(const evtri_prep *p, cJSON *shapes, const char *(*dtype_of)(const char *, void *),
                 void *ud, kevo_error *err) {
  cJSON *sh;
  cJSON_ArrayForEach(sh, shapes) {
    const char *label = cJSON_GetStringValue(cJSON_GetObjectItem(sh, "label"));
    cJSON *plan = cJSON_GetObjectItem(sh, "candidate");
    int k = 0;
    cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItem(plan, "kernels")) {
      const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(l, "name"));
      size_t j = 0;
      while (name && j < p->njobs && strcmp(p->jobs[j].kernel, name))
        j++;
      if (!name || j == p->njobs)
        return kevo_fail(err, KEVO_E_LAUNCH,
                         "kevo:launch at shape %s: kernel '%s' is not launched at the benchmark "
                         "shape (every shape must launch the same kernels)",
                         label ? label : "?", name ? name : "?");
      cJSON *sig = NULL;
      if (triton_plan_signature(l, dtype_of, ud, &sig, err))
        return kevo_fail_prefix(err, "kevo:launch at shape %s: ", label ? label : "?");
      int same = cJSON_Compare(sig, p->jobs[j].signature, 1);
      cJSON_Delete(sig);
      if (!same)
        return kevo_fail(err, KEVO_E_LAUNCH,
                         "kevo:launch at shape %s: kernel '%s' gets other argument types than "
                         "at the benchmark shape",
                         label ? label : "?", name);
      if (triton_plan_finish(plan, l, k, p->jobs[j].mod, err))
        return kevo_fail_prefix(err, "kevo:launch at shape %s: ", label ? label : "?");
      cJSON_ReplaceItemInObject(l, "module", cJSON_CreateNumber((double)j));
      k++;
    }
  }
  return KEVO_OK;
}

const evtri_job *evtri_failed(const evtri_prep *p) {
  for (size_t j = 0; j < p->njobs; j++)
    if (p->jobs[j].rc || !p->jobs[j].mod || !p->jobs[j].mod->ok) return &p->jobs[j];
  return NULL;
}

cJSON *evtri_compile_json(const evtri_prep *p, const char *arch) {
  cJSON *c = cJSON_CreateObject();
  double ms = 0;
  int cached = p->njobs > 0;
  const char *a = arch;
  for (size_t j = 0; j < p->njobs; j++) {
    const triton_module *m = p->jobs[j].mod;
    ms += m ? m->compile_ms : 0;
    cached &= m && m->cached;
    if (m && m->arch[0]) a = m->arch;
  }
  cJSON_AddNumberToObject(c, "ms", ms);
  cJSON_AddBoolToObject(c, "cached", cached);
  cJSON_AddStringToObject(c, "arch", a);
  cJSON_AddStringToObject(c, "lang", "triton");
  cJSON *diags = cJSON_AddArrayToObject(c, "diagnostics");
  cJSON *kernels = cJSON_AddArrayToObject(c, "kernels");
  const evtri_job *bad = evtri_failed(p);
  if (bad && bad->mod)
    for (size_t i = 0; i < bad->mod->ndiags; i++) {
      const triton_diag *d = &bad->mod->diags[i];
      cJSON *dj = cJSON_CreateObject();
      cJSON_AddNumberToObject(dj, "line", d->line);
      cJSON_AddNumberToObject(dj, "col", d->col);
      cJSON_AddStringToObject(dj, "severity", d->severity);
      cJSON_AddStringToObject(dj, "message", d->message ? d->message : "");
      cJSON_AddItemToArray(diags, dj);
    }
  if (bad && bad->err.msg[0]) cJSON_AddStringToObject(c, "log", bad->err.msg);
  for (size_t j = 0; j < p->njobs; j++) {
    const triton_module *m = p->jobs[j].mod;
    if (!m || !m->ok) continue;
    cJSON *kj = cJSON_CreateObject();
    cJSON_AddStringToObject(kj, "name", m->name);
    cJSON_AddNumberToObject(kj, "num_warps", m->num_warps);
    cJSON_AddNumberToObject(kj, "num_stages", m->num_stages);
    cJSON_AddNumberToObject(kj, "shared_dynamic", m->shared);
    if (m->triton_version[0]) cJSON_AddStringToObject(kj, "triton", m->triton_version);
    cJSON_AddItemToArray(kernels, kj);
  }
  return c;
}

void evtri_prep_free(evtri_prep *p) {
  for (size_t j = 0; j < p->njobs; j++) {
    cJSON_Delete(p->jobs[j].signature);
    cJSON_Delete(p->jobs[j].constexprs);
    triton_module_free(p->jobs[j].mod);
  }
  memset(p, 0, sizeof *p);
}
