/* kevo eval RECIPE KERNEL: compile, verify and time one kernel against a recipe, and say what
 * to do about it. */
#include "buf.h"
#include "eval_profile.h"
#include "eval_result.h"
#include "recipe_knobs.h"
#include "evaluate.h"
#include "registry.h"
#include "triton.h"

#include <cjson/cJSON.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SETS = 64 };

static int usage(const char *why) {
  fprintf(stderr,
          "kevo eval: %s\nusage: kevo eval RECIPE KERNEL.cu [--json] [--set KNOB=VALUE]... "
          "[--arch sm_90] [--no-bench] [--profile] [--seed N] [--trials N] [--deadline S] "
          "(see kevo eval --help)\n",
          why);
  return KEVO_EXIT_USAGE;
}

/* Is `file` (a recipe source, resolved against the recipe's directory if need be) the same
 * file as `kernel`? */
static int same_file(const kevo_recipe *r, const char *file, const char *kernel_real) {
  char a[PATH_MAX], joined[PATH_MAX];
  if (realpath(file, a) && !strcmp(a, kernel_real)) return 1;
  if (file[0] == '/' || !r->dir) return 0;
  snprintf(joined, sizeof joined, "%s/%s", r->dir, file);
  return realpath(joined, a) && !strcmp(a, kernel_real);
}

/* A recipe's own seed starts where `kevo run` starts it: a knob neither given nor defaulted by
 * the source itself takes the first value of the seed's space (the matmul's num_warps 8, not
 * the compiler's 4). Returns the new number of knobs in sets. */
static int seed_index(const kevo_recipe *r, const char *real, const char *lang) {
  for (size_t i = 0; i < r->nseeds; i++)
    if (!strcmp(r->seeds[i].lang, lang) && same_file(r, r->seeds[i].file, real)) return (int)i;
  return -1;
}

static size_t seed_start_knobs(const kevo_recipe *r, const char *real, const char *lang,
                               const kevo_buf *src, kevo_define *sets, size_t nsets) {
  int at = seed_index(r, real, lang);
  if (at < 0) return nsets;
  const kevo_source *seed = &r->seeds[at];
  recipe_knobs declared;
  recipe_knobs_declared(lang, src->data, src->len, &declared);
  for (size_t k = 0; k < seed->nknobs && nsets < MAX_SETS; k++) {
    const kevo_knob *kn = &seed->knobs[k];
    int known = kn->nvalues == 0;
    for (size_t j = 0; j < nsets && !known; j++)
      known = !strcmp(sets[j].name, kn->name);
    for (size_t j = 0; j < declared.n && !known; j++)
      known = !strcmp(declared.d[j].name, kn->name);
    if (!known) sets[nsets++] = (kevo_define){kn->name, kn->values[0]};
  }
  recipe_knobs_free(&declared);
  return nsets;
}

/* Knob values that make no launch are bad input (exit 2), found before compiling: the
 * recipe's own seed space (kevo check's test), and --set values under which the launch chunk
 * fails where it resolves without them (BLOCK=0). A chunk that fails either way is the
 * kernel's own fault: the evaluation says so (launch_error). Prints why; returns 1 to refuse. */
static int knobs_make_no_launch(evaluator *ev, const eval_candidate *cand, const char *real,
                                const kevo_buf *src, size_t nuser) {
  const kevo_recipe *r = evaluator_recipe(ev);
  kevo_error err = {0};
  int at = real ? seed_index(r, real, cand->lang) : -1;
  if (at >= 0 && evaluator_check_space(ev, (size_t)at, &err)) {
    fprintf(stderr, "kevo eval: %s\n", err.msg);
    return 1;
  }
  if (nuser == 0) return 0;
  for (size_t i = 0; !strcmp(cand->lang, "triton") && i < nuser; i++)
    if (triton_is_option(cand->knobs[i].name) &&
        triton_option_value(cand->knobs[i].name, cand->knobs[i].value, NULL, &err)) {
      fprintf(stderr, "kevo eval: --set %s=%s: %s\n", cand->knobs[i].name, cand->knobs[i].value,
              err.msg);
      return 1;
    }
  cJSON *plans = NULL;
  int rc = evaluator_plans(ev, cand, &plans, &err);
  cJSON_Delete(plans);
  if (rc == KEVO_OK || rc == KEVO_E_NOGPU) return 0;
  kevo_define start[MAX_SETS]; /* where the kernel starts without --set */
  eval_candidate base = *cand;
  base.knobs = start;
  base.nknobs = real ? seed_start_knobs(r, real, cand->lang, src, start, 0) : 0;
  kevo_error berr = {0};
  rc = evaluator_plans(ev, &base, &plans, &berr);
  cJSON_Delete(plans);
  if (rc != KEVO_OK && rc != KEVO_E_NOGPU) return 0;
  fprintf(stderr, "kevo eval: --set");
  for (size_t i = 0; i < nuser; i++)
    fprintf(stderr, " %s=%s", cand->knobs[i].name, cand->knobs[i].value);
  fprintf(stderr, ": the launch chunk makes no launch with %s: %s\n",
          nuser > 1 ? "these values" : "this value", err.msg);
  return 1;
}

static void print_table(const cJSON *res, const kevo_recipe *r, const char *kernel) {
  const cJSON *comp = cJSON_GetObjectItem(res, "compile");
  const cJSON *dev = cJSON_GetObjectItem(res, "device");
  const cJSON *ver = cJSON_GetObjectItem(res, "verify");
  const cJSON *bn = cJSON_GetObjectItem(res, "bench");
  printf("kevo eval: recipe %s, kernel %s", r->name, kernel);
  if (cJSON_IsObject(dev)) printf(" on %s", eval_jstr(dev, "name"));
  printf("\n  %-12s %s (stage %s)\n", "verdict", eval_jstr(res, "verdict"),
         eval_jstr(res, "stage"));
  printf("  %-12s %.1f ms%s, %s\n", "compile", eval_jnum(comp, "ms"),
         cJSON_IsTrue(cJSON_GetObjectItem(comp, "cached")) ? " (cached)" : "",
         eval_jstr(comp, "arch"));
  const cJSON *k;
  cJSON_ArrayForEach(k, cJSON_GetObjectItem(comp, "kernels")) {
    if (cJSON_GetObjectItem(k, "num_warps")) { /* Triton */
      printf("  %-12s %s: num_warps %.0f, num_stages %.0f, %.0f B dynamic shared\n", "kernel",
             eval_jstr(k, "name"), eval_jnum(k, "num_warps"), eval_jnum(k, "num_stages"),
             eval_jnum(k, "shared_dynamic"));
      continue;
    }
    printf("  %-12s %s: %.0f registers, spills %.0f/%.0f B (store/load), %.0f B static shared\n",
           "kernel", eval_jstr(k, "name"), eval_jnum(k, "registers"), eval_jnum(k, "spill_stores"),
           eval_jnum(k, "spill_loads"), eval_jnum(k, "shared_static"));
  }
  if (cJSON_IsObject(ver))
    printf("  %-12s %.0f trials x %.0f shapes, %.0f mismatches\n", "verify",
           eval_jnum(ver, "trials"), eval_jnum(ver, "shapes"),
           isnan(eval_jnum(ver, "mismatches")) ? 0 : eval_jnum(ver, "mismatches"));
  const cJSON *held = cJSON_GetObjectItem(ver, "held_out"), *it;
  if (cJSON_GetArraySize(held) > 0) {
    printf("  %-12s", "held-out");
    cJSON_ArrayForEach(it, held) printf(" %s", cJSON_GetStringValue(it));
    printf(" (drawn from the domain for this evaluation; %.0f stress trials; inputs' seed %s)\n",
           isnan(eval_jnum(ver, "stress_trials")) ? 0 : eval_jnum(ver, "stress_trials"),
           *eval_jstr(ver, "seed") ? eval_jstr(ver, "seed") : "given");
  }
  cJSON_ArrayForEach(it, cJSON_GetObjectItem(res, "warnings"))
      printf("  %-12s %s\n", "warning", cJSON_GetStringValue(it));
  if (cJSON_IsObject(bn)) {
    printf("  %-12s %.4g ms median (p10 %.4g, p90 %.4g, rse %.2g%%, %.0f reps)\n", "time",
           eval_jnum(bn, "median_ms"), eval_jnum(bn, "p10_ms"), eval_jnum(bn, "p90_ms"),
           100 * eval_jnum(bn, "rse"), eval_jnum(bn, "reps"));
    printf("  %-12s %.4g ms median, speed-up %.3gx\n",
           cJSON_GetObjectItem(bn, "eager_ms") ? "torch eager" : "reference",
           eval_jnum(bn, "ref_median_ms"), eval_jnum(bn, "speedup"));
    if (cJSON_GetObjectItem(bn, "ref_alone_ms"))
      printf("  %-12s %.4g ms alone (drift %.1f%% between the candidate's repetitions)\n", "",
             eval_jnum(bn, "ref_alone_ms"), eval_jnum(bn, "ref_drift_pct"));
    if (cJSON_GetObjectItem(bn, "compiled_ms")) /* a PyTorch reference (docs/kbench.md) */
      printf("  %-12s %.4g ms median, speed-up %.3gx\n", "torch.compile",
             eval_jnum(bn, "compiled_ms"), eval_jnum(bn, "speedup_compiled"));
    printf("  %-12s %.0f GB/s, %.0f%% of roofline (floor %.3g ms)\n", "throughput",
           eval_jnum(bn, "gbps"), eval_jnum(bn, "roofline_pct"), eval_jnum(bn, "floor_ms"));
    printf("  %-12s %.0f MHz SM clock, %.0f C\n", "clock/temp", eval_jnum(bn, "sm_clock_mhz"),
           eval_jnum(bn, "temp_c"));
  }
  printf("  %-12s %s\n", "message", eval_jstr(res, "message"));
  const cJSON *prof = cJSON_GetObjectItem(res, "profile");
  if (prof) {
    kevo_buf b;
    kevo_buf_init(&b, 1 << 16);
    eval_profile_table(&b, prof, NULL);
    printf("\n%s", b.data ? b.data : "");
    kevo_buf_free(&b);
  }
  /* no_gpu: the message above says it all; the feedback would repeat it for a model */
  const char *verdict = eval_jstr(res, "verdict");
  if (strcmp(verdict, "ok") != 0 && strcmp(verdict, "no_gpu") != 0) {
    const char *fb = eval_jstr(res, "feedback");
    printf("\n%s%s", fb, *fb && fb[strlen(fb) - 1] != '\n' ? "\n" : "");
  }
}

/* --profile: the profile stage after the evaluation (docs/profile.md), the reference beside
 * the candidate; the result gets "profile" and its feedback the diagnosis. A kernel that did
 * not verify is not profiled: it says so. */
static void add_profile(evaluator *ev, const eval_candidate *cand, cJSON *res,
                        const kevo_buf *src) {
  cJSON *p = NULL;
  kevo_error err = {0};
  if (!cJSON_IsTrue(cJSON_GetObjectItem(res, "ok"))) {
    p = cJSON_CreateObject();
    cJSON_AddBoolToObject(p, "ok", 0);
    cJSON_AddStringToObject(p, "reason", "failed");
    cJSON_AddStringToObject(p, "error", "only a kernel that verifies is profiled");
  } else {
    const char *bound = eval_jstr(cJSON_GetObjectItem(res, "bench"), "bound");
    const char *bounds[1] = {*bound ? bound : NULL};
    if (evaluator_profile_many(ev, cand, 1, 1, 0, bounds, &p, &err)) {
      p = cJSON_CreateObject();
      cJSON_AddBoolToObject(p, "ok", 0);
      cJSON_AddStringToObject(p, "reason", "failed");
      cJSON_AddStringToObject(p, "error", err.msg);
    }
  }
  cJSON_AddItemToObject(res, "profile", p);
  char *fb = eval_feedback(res, src->data, src->len);
  cJSON_ReplaceItemInObject(res, "feedback", cJSON_CreateString(fb ? fb : ""));
  free(fb);
}

static int eval_main(int argc, char **argv) {
  const char *recipe_path = NULL, *kernel = NULL, *lang = NULL;
  int json = 0, profile = 0;
  kevo_define sets[MAX_SETS];
  size_t nsets = 0;
  eval_config cfg = EVAL_CONFIG_DEFAULT;
  cfg.race = 0; /* one candidate: nothing to race against */
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--json")) {
      json = 1;
    } else if (!strcmp(a, "--no-bench")) {
      cfg.bench = 0;
    } else if (!strcmp(a, "--profile")) {
      profile = 1;
    } else if (!strcmp(a, "--set") || !strcmp(a, "--arch") || !strcmp(a, "--seed") ||
               !strcmp(a, "--deadline") || !strcmp(a, "--trials") || !strcmp(a, "--lang")) {
      if (!val) return usage("an option lacks its value");
      i++;
      char *end;
      if (!strcmp(a, "--set")) {
        char *eq = strchr(val, '=');
        if (!eq || eq == val) return usage("--set wants KNOB=VALUE");
        if (nsets == MAX_SETS) return usage("too many --set");
        *eq = '\0';
        sets[nsets++] = (kevo_define){val, eq + 1};
      } else if (!strcmp(a, "--arch")) {
        cfg.arch = val;
      } else if (!strcmp(a, "--lang")) {
        lang = val;
      } else if (!strcmp(a, "--seed")) {
        cfg.seed = strtoull(val, &end, 0);
        if (*end || !*val) return usage("--seed wants an integer");
      } else if (!strcmp(a, "--trials")) {
        cfg.trials = (int)strtol(val, &end, 10);
        if (*end || cfg.trials < EVAL_MIN_TRIALS) return usage("--trials wants an integer >= 5");
      } else {
        cfg.deadline_s = strtod(val, &end);
        if (*end || !(cfg.deadline_s > 0)) return usage("--deadline wants seconds > 0");
      }
    } else if (a[0] == '-' && a[1]) {
      char msg[300];
      snprintf(msg, sizeof msg, "unknown option '%s'", a);
      return usage(msg);
    } else if (!recipe_path) {
      recipe_path = a;
    } else if (!kernel) {
      kernel = a;
    } else {
      return usage("too many arguments");
    }
  }
  if (!recipe_path || !kernel) return usage("RECIPE and KERNEL are required");
  if (!lang) {
    size_t n = strlen(kernel);
    lang = n > 3 && !strcmp(kernel + n - 3, ".py") ? "triton" : "cuda";
  }
  if (strcmp(lang, "cuda") && strcmp(lang, "triton")) return usage("--lang is cuda or triton");
  kevo_error aerr = {0};
  if (cfg.arch && cuda_check_arch(cfg.arch, &aerr)) return usage(aerr.msg);

  kevo_error err = {0};
  kevo_recipe *r = NULL;
  char found[4096];
  if (kevo_recipe_find(recipe_path, found, sizeof found, &err) ||
      kevo_recipe_load(found, &r, &err)) {
    fprintf(stderr, "kevo eval: %s\n", err.msg);
    return KEVO_EXIT_USAGE;
  }
  kevo_buf src;
  kevo_buf_init(&src, CUDA_MAX_SOURCE); /* a larger kernel is bad input, not a verdict */
  if (kevo_read_file(kernel, &src, &err)) {
    fprintf(stderr, "kevo eval: %s%s\n", err.msg,
            err.status == KEVO_E_NOMEM ? ", the most a kernel may be" : "");
    kevo_recipe_free(r);
    kevo_buf_free(&src);
    return KEVO_EXIT_USAGE;
  }
  const char *base = strrchr(kernel, '/') ? strrchr(kernel, '/') + 1 : kernel;
  eval_candidate cand = {.lang = lang,
                         .source = src.data,
                         .len = src.len,
                         .name = base,
                         .knobs = sets,
                         .nknobs = nsets};
  /* The recipe's own sources carry their launch chunk in the recipe. */
  char real[PATH_MAX];
  int have_real = realpath(kernel, real) != NULL;
  if (have_real) {
    for (size_t i = 0; i <= r->nseeds; i++) {
      const kevo_source *s = i < r->nseeds ? &r->seeds[i] : &r->reference;
      if (s->launch && same_file(r, s->file, real)) {
        cand.launch = s->launch;
        cand.launch_name = r->path;
        cand.launch_line = s->launch_line;
        break;
      }
    }
  }
  size_t nuser = nsets; /* the --set knobs come first */
  if (have_real) nsets = seed_start_knobs(r, real, lang, &src, sets, nsets);
  cand.nknobs = nsets;
  evaluator *ev = NULL;
  if (evaluator_new(r, NULL, &cfg, &ev, &err)) {
    fprintf(stderr, "kevo eval: %s\n", err.msg);
    kevo_recipe_free(r);
    kevo_buf_free(&src);
    return KEVO_EXIT_FAILED;
  }
  if (knobs_make_no_launch(ev, &cand, have_real ? real : NULL, &src, nuser)) {
    evaluator_free(ev);
    kevo_buf_free(&src);
    return KEVO_EXIT_USAGE;
  }
  cJSON *res = NULL;
  if (profile) evaluator_profile_prepare(ev); /* ncu starts while the kernel is judged */
  int rc = evaluator_run(ev, &cand, &res, &err);
  int exit_code = KEVO_EXIT_FAILED;
  if (!rc && profile) add_profile(ev, &cand, res, &src);
  if (rc) {
    fprintf(stderr, "kevo eval: %s\n", err.msg);
  } else {
    if (json) {
      char *t = cJSON_Print(res);
      if (t) puts(t);
      free(t);
    } else {
      print_table(res, evaluator_recipe(ev), kernel);
    }
    if (cJSON_IsTrue(cJSON_GetObjectItem(res, "ok"))) exit_code = KEVO_EXIT_OK;
  }
  cJSON_Delete(res);
  evaluator_free(ev);
  kevo_buf_free(&src);
  return exit_code;
}

const struct kevo_command kevo_cmd_eval = {
    "eval", "compile, verify and time one kernel against a recipe",
    "usage: kevo eval RECIPE KERNEL [options]\n\n"
    "Compiles KERNEL (CUDA C, or Triton for .py) with NVRTC, checks it against the recipe's\n"
    "reference on the GPU (every shape, at least 5 trials with fresh inputs), times it against\n"
    "the reference side by side, and prints a verdict with what to fix.\n\n"
    "The kernel says how it is launched in a /* kevo:launch return {kernels = {...}} */ block\n"
    "(a recipe's own seeds may carry it in the recipe instead). A recipe's own seed starts\n"
    "where `kevo run` starts it: a knob that neither --set nor the source gives takes the\n"
    "first value of the seed's space.\n\n"
    "options:\n"
    "  --json             print the whole evaluation result as JSON\n"
    "  --set KNOB=VALUE   a knob: a -D define for the compiler, a name in the launch chunk\n"
    "  --arch sm_90       target architecture (default: $KEVO_ARCH or sm_90)\n"
    "  --no-bench         verify only, do not time\n"
    "  --profile          then profile it (Nsight Compute, the reference beside it): hardware\n"
    "                     metrics with one-line readings, and a ranked diagnosis in the\n"
    "                     feedback (docs/profile.md); without ncu or counters it says why\n"
    "  --seed N           fix the trial inputs to this seed, to reproduce a failure (default:\n"
    "                     a secret seed per evaluation; held-out shapes are always fresh)\n"
    "  --trials N         trials per shape, at least 5 (default 5)\n"
    "  --deadline S       seconds the worker has to answer (default: from the problem, its\n"
    "                     runs at 100x the reference's time or its bytes at copy speed,\n"
    "                     20 to 600 s); past it the kernel is judged `timeout`\n"
    "  --lang cuda|triton language of KERNEL (default: from its extension)\n\n"
    "The worker is `kevo worker` (one process owning the GPU), or the command in $KEVO_WORKER.\n"
    "exit: 0 the kernel is correct (verdict ok), 1 it is not or verification needs a GPU,\n"
    "2 bad usage, a malformed recipe (file:line:column), or a kernel file that is not a\n"
    "regular file or is over 4 MiB.\n",
    eval_main, 0};
