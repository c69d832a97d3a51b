/* eval_space.c: a recipe seed's knob space checked without a GPU (evaluate.h
 * evaluator_check_space): every value of every knob must make a launch. */
#include "buf.h"
#include "evaluate.h"

#include <cjson/cJSON.h>

#include <stdio.h>
#include <string.h>

enum { SPACE_MAX_KNOBS = 64 };

/* Resolves the seed's launch chunk with knobs on every shape; KEVO_E_NOGPU (the chunk reads the
 * device) counts as resolved: a GPU host checks it. */
static int resolves(evaluator *ev, const eval_candidate *base, const kevo_define *knobs, size_t n,
                    kevo_error *err) {
  eval_candidate c = *base;
  c.knobs = knobs;
  c.nknobs = n;
  cJSON *plans = NULL;
  int rc = evaluator_plans(ev, &c, &plans, err);
  cJSON_Delete(plans);
  return rc == KEVO_E_NOGPU ? KEVO_OK : rc;
}

int evaluator_check_space(evaluator *ev, size_t seed, kevo_error *err) {
  const kevo_recipe *r = evaluator_recipe(ev);
  if (seed >= r->nseeds) return kevo_fail(err, KEVO_E_ARG, "no seed %zu", seed);
  const kevo_source *s = &r->seeds[seed];
  if (s->nknobs == 0 || s->nknobs > SPACE_MAX_KNOBS) return KEVO_OK;
  kevo_buf src;
  kevo_buf_init(&src, CUDA_MAX_SOURCE);
  int rc = kevo_read_file(s->file, &src, err);
  if (rc) {
    kevo_buf_free(&src);
    return rc;
  }
  eval_candidate base = {.lang = s->lang,
                         .source = src.data,
                         .len = src.len,
                         .name = s->file,
                         .launch = s->launch,
                         .launch_name = r->path,
                         .launch_line = s->launch_line};
  /* the seed's start (every knob at its first value), then each other value of each knob */
  kevo_define point[SPACE_MAX_KNOBS];
  for (size_t k = 0; k < s->nknobs; k++)
    point[k] = (kevo_define){s->knobs[k].name, s->knobs[k].values[0]};
  for (size_t k = 0; k < s->nknobs && !rc; k++) {
    for (size_t v = k == 0 ? 0 : 1; v < s->knobs[k].nvalues && !rc; v++) {
      point[k].value = s->knobs[k].values[v];
      rc = resolves(ev, &base, point, s->nknobs, err);
      if (rc)
        kevo_fail_prefix(err, "%s: seeds[%zu].space: %s=%s makes no launch: ", r->path, seed,
                         s->knobs[k].name, s->knobs[k].values[v]);
    }
    point[k].value = s->knobs[k].values[0];
  }
  kevo_buf_free(&src);
  return rc;
}
