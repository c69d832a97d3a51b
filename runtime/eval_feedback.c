/* eval_feedback.c: the `feedback` text of an evaluation result, written for the model (or the
 * person) who has to make the next version of the kernel: what failed, where in the source,
 * with numbers, and what the kernel costs. */
#include "eval_profile.h"
#include "eval_result.h"
#include "evaluate.h"

#include "buf.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FEEDBACK_CAP = 16 << 10, MAX_DIAGS = 8 };

/* Appends line `line` of the source, with a caret under column col (0: none). */
static void quote_line(kevo_buf *b, const char *src, size_t len, int line, int col) {
  if (!src || line <= 0) return;
  const char *p = src, *end = src + len;
  for (int l = 1; l < line && p < end; l++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) return;
    p = nl + 1;
  }
  if (p >= end) return;
  const char *nl = memchr(p, '\n', (size_t)(end - p));
  int n = (int)((nl ? nl : end) - p);
  if (n > 200) n = 200;
  kevo_buf_printf(b, "  %5d | %.*s\n", line, n, p);
  if (col > 0 && col <= n + 1) {
    kevo_buf_printf(b, "        | ");
    for (int i = 1; i < col; i++)
      kevo_buf_append(b, p[i - 1] == '\t' ? "\t" : " ", 1);
    kevo_buf_puts(b, "^\n");
  }
}

static void compile_feedback(kevo_buf *b, const cJSON *res, const char *src, size_t len) {
  const cJSON *diags = cJSON_GetObjectItem(cJSON_GetObjectItem(res, "compile"), "diagnostics");
  int shown = 0, total = cJSON_GetArraySize(diags);
  kevo_buf_puts(b, "The kernel did not compile. The compiler said:\n");
  const cJSON *d;
  for (int pass = 0; pass < 2; pass++) /* errors first, then warnings and notes */
    cJSON_ArrayForEach(d, diags) {
      int is_error = !strcmp(eval_jstr(d, "severity"), "error");
      if (is_error != (pass == 0) || shown >= MAX_DIAGS) continue;
      int line = (int)eval_jnum(d, "line"), col = (int)eval_jnum(d, "col");
      kevo_buf_printf(b, "line %d:%d: %s: %s\n", line, col, eval_jstr(d, "severity"),
                      eval_jstr(d, "message"));
      quote_line(b, src, len, line, col);
      shown++;
    }
  if (total > shown) kevo_buf_printf(b, "(%d more diagnostics not shown)\n", total - shown);
  if (total == 0) {
    const char *log = eval_jstr(cJSON_GetObjectItem(res, "compile"), "log");
    kevo_buf_printf(b, "%.*s\n", 2000, *log ? log : eval_jstr(res, "message"));
  }
}

/* A number as text, or the string the worker sent for NaN and Inf. */
static const char *val(const cJSON *o, const char *key, char *buf, size_t cap) {
  const cJSON *v = cJSON_GetObjectItem(o, key);
  if (cJSON_IsString(v)) return v->valuestring;
  snprintf(buf, cap, "%.9g", cJSON_IsNumber(v) ? v->valuedouble : NAN);
  return buf;
}

static void wrong_feedback(kevo_buf *b, const cJSON *res) {
  const cJSON *v = cJSON_GetObjectItem(res, "verify");
  const cJSON *w = cJSON_GetObjectItem(v, "worst");
  kevo_buf_printf(b, "The kernel gives wrong results (%s).\n", eval_jstr(res, "message"));
  if (!isnan(eval_jnum(v, "mismatches")))
    kevo_buf_printf(b, "%.0f elements out of tolerance", eval_jnum(v, "mismatches"));
  if (!isnan(eval_jnum(v, "trials")))
    kevo_buf_printf(b, " over %.0f trials", eval_jnum(v, "trials"));
  kevo_buf_puts(b, ".\n");
  if (cJSON_IsObject(w)) {
    kevo_buf_printf(b, "Worst element: %s", eval_jstr(w, "tensor"));
    const cJSON *idx = cJSON_GetObjectItem(w, "index"), *i;
    kevo_buf_puts(b, "[");
    int first = 1;
    cJSON_ArrayForEach(i, idx) {
      kevo_buf_printf(b, "%s%.0f", first ? "" : ", ", i->valuedouble);
      first = 0;
    }
    char e[64], a[64], ae[64], re[64];
    kevo_buf_printf(b,
                    "] (flat index %.0f) at shape %s: expected %s, got %s (abs error %s, "
                    "rel error %s).\n",
                    eval_jnum(w, "flat"), eval_jstr(w, "shape"), val(w, "expected", e, sizeof e),
                    val(w, "actual", a, sizeof a), val(w, "abs_err", ae, sizeof ae),
                    val(w, "rel_err", re, sizeof re));
  }
  const cJSON *flags = cJSON_GetObjectItem(v, "flags"), *f;
  cJSON_ArrayForEach(f, flags) {
    if (cJSON_IsTrue(f) || (cJSON_IsNumber(f) && f->valuedouble != 0))
      kevo_buf_printf(b, "Check flagged: %s.\n", f->string);
  }
}

static void bench_feedback(kevo_buf *b, const cJSON *res) {
  const cJSON *v = cJSON_GetObjectItem(res, "verify");
  const cJSON *bn = cJSON_GetObjectItem(res, "bench");
  if (!isnan(eval_jnum(v, "trials")))
    kevo_buf_printf(b, "Correct: %.0f trials over %.0f shapes.\n", eval_jnum(v, "trials"),
                    eval_jnum(v, "shapes"));
  if (!cJSON_IsObject(bn)) return;
  double med = eval_jnum(bn, "median_ms"), ref = eval_jnum(bn, "ref_median_ms"),
         sp = eval_jnum(bn, "speedup");
  kevo_buf_printf(b, "Time: %.4g ms median (spread %.3g%%, %.0f reps)", med,
                  100 * eval_jnum(bn, "rse"), eval_jnum(bn, "reps"));
  if (!isnan(ref)) kevo_buf_printf(b, "; reference %.4g ms; speed-up %.3gx", ref, sp);
  kevo_buf_puts(b, ".\n");
  double gbps = eval_jnum(bn, "gbps"), roof = eval_jnum(bn, "roofline_pct");
  int compute = !strcmp(eval_jstr(bn, "bound"), "compute"); /* else memory-bound (or not said) */
  if (!isnan(gbps) && gbps > 0) {
    kevo_buf_printf(b, "Memory throughput %.0f GB/s", gbps);
    if (!isnan(roof) && !compute)
      kevo_buf_printf(b, " = %.0f%% of the device's copy bandwidth", roof);
    kevo_buf_puts(b, ".\n");
    if (!isnan(roof) && roof < 70 && !compute)
      kevo_buf_puts(b, "It is well below the memory roofline: look at coalescing, vector loads, "
                       "occupancy and the number of passes over memory.\n");
  }
  double tf = eval_jnum(bn, "tflops"), peak = eval_jnum(bn, "peak_tflops");
  if (!isnan(tf) && tf > 0) {
    kevo_buf_printf(b, "Compute: %.3g TFLOP/s", tf);
    if (compute && !isnan(roof) && !isnan(peak))
      kevo_buf_printf(b, " = %.0f%% of the GPU's %s peak (%.0f TFLOP/s at its max clock)", roof,
                      eval_jstr(bn, "peak_of"), peak);
    kevo_buf_puts(b, ".\n");
    if (compute && !isnan(roof) && roof < 50)
      kevo_buf_puts(b, "It is compute-bound and well below the compute roofline: use the tensor "
                       "cores, reuse data from shared memory and registers (larger tiles), and "
                       "overlap the loads of the next tile with the math of this one.\n");
  }
}

static void resource_feedback(kevo_buf *b, const cJSON *res) {
  const cJSON *ks = cJSON_GetObjectItem(cJSON_GetObjectItem(res, "compile"), "kernels"), *k;
  cJSON_ArrayForEach(k, ks) {
    if (cJSON_GetObjectItem(k, "num_warps")) { /* Triton: what the compile options made */
      kevo_buf_printf(b, "Kernel %s: num_warps %.0f, num_stages %.0f, %.0f B dynamic shared.\n",
                      eval_jstr(k, "name"), eval_jnum(k, "num_warps"), eval_jnum(k, "num_stages"),
                      eval_jnum(k, "shared_dynamic"));
      continue;
    }
    kevo_buf_printf(b, "Kernel %s: %.0f registers/thread, %.0f B static shared, %.0f B stack",
                    eval_jstr(k, "name"), eval_jnum(k, "registers"), eval_jnum(k, "shared_static"),
                    eval_jnum(k, "local_bytes"));
    double ss = eval_jnum(k, "spill_stores"), sl = eval_jnum(k, "spill_loads");
    if (ss > 0 || sl > 0)
      kevo_buf_printf(b, ", SPILLS %.0f B stored / %.0f B loaded (reduce register pressure)", ss,
                      sl);
    kevo_buf_puts(b, ".\n");
  }
}

char *eval_feedback(const cJSON *res, const char *src, size_t len) {
  kevo_buf b;
  kevo_buf_init(&b, FEEDBACK_CAP);
  const char *verdict = eval_jstr(res, "verdict"), *msg = eval_jstr(res, "message");
  if (!strcmp(verdict, "compile_error")) {
    compile_feedback(&b, res, src, len);
  } else if (!strcmp(verdict, "launch_error")) {
    kevo_buf_printf(&b,
                    "The launch description failed: %s\n"
                    "A launch chunk returns {kernels = {{name = \"entry\", grid = {...}, "
                    "block = {...}, shared = bytes, args = {\"x\", \"y\", i32(N)}}}}; it sees the "
                    "shape's params, the knobs, cdiv, min, max, i32 i64 u32 u64 f32 f64, ptr, "
                    "null and device.\n",
                    msg);
  } else if (!strcmp(verdict, "wrong") || !strcmp(verdict, "unwritten") ||
             !strcmp(verdict, "nondeterministic") || !strcmp(verdict, "input_modified")) {
    wrong_feedback(&b, res);
    if (!strcmp(verdict, "unwritten"))
      kevo_buf_puts(&b, "Some outputs were never written: every output element must be stored.\n");
    if (!strcmp(verdict, "nondeterministic"))
      kevo_buf_puts(&b, "Two runs gave different answers: look for races or reads of "
                        "uninitialised memory.\n");
    if (!strcmp(verdict, "input_modified"))
      kevo_buf_puts(&b, "The kernel wrote to an input: inputs are read-only.\n");
  } else if (!strcmp(verdict, "crash")) {
    kevo_buf_printf(&b,
                    "The kernel crashed the GPU context: %s\nLook for out-of-bounds indexing "
                    "on shapes that are not multiples of the block size.\n",
                    msg);
  } else if (!strcmp(verdict, "timeout")) {
    kevo_buf_printf(&b,
                    "The kernel did not finish: %s\nLook for loops whose exit depends on "
                    "data, or barriers not all threads reach.\n",
                    msg);
  } else if (!strcmp(verdict, "implausible")) {
    kevo_buf_printf(&b,
                    "The measured time is below the physical floor, so it cannot be real: "
                    "%s\nThe kernel probably skips work.\n",
                    msg);
  } else if (!strcmp(verdict, "ok")) {
    bench_feedback(&b, res);
  } else {
    kevo_buf_printf(&b, "%s: %s\n", verdict, msg);
  }
  if (strcmp(verdict, "compile_error") != 0) resource_feedback(&b, res);
  const cJSON *w; /* artifact warnings (docs/worker.md "Threat model", class 11) */
  cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(res, "warnings")) if (cJSON_IsString(w))
      kevo_buf_printf(&b,
                      "Warning: %s. Keep timers, sleeps and cache policies out of kernels "
                      "meant to be fast.\n",
                      w->valuestring);
  /* the hardware's view, when the profile stage ran (docs/profile.md) */
  eval_profile_feedback(&b, cJSON_GetObjectItemCaseSensitive(res, "profile"));
  if (b.len == 0) kevo_buf_puts(&b, msg);
  return kevo_buf_steal(&b, NULL);
}
