/* gpuncu.h: Nsight Compute (`ncu`) as the worker's profiler (docs/profile.md). The fixed metric
 * set, running ncu on a replay child with a deadline, reading its CSV, and saying in one line
 * why it could not profile. Knows nothing of Lua; never prints. */
#ifndef KEVO_GPUNCU_H
#define KEVO_GPUNCU_H

#include "status.h"

typedef struct cJSON cJSON;

/* The fixed metric set, comma-separated, as ncu's --metrics takes it ($KEVO_NCU_METRICS, when
 * set, replaces it: to try another set by hand). */
const char *wk_ncu_metrics(void);

/* The --kernel-name filter that profiles only the plans' own kernels: "regex:^(a|b)$" over
 * the distinct kernel names of the request's profile.plans[].plan.kernels[] (cubin entry names,
 * to be matched with --kernel-name-base mangled), regex characters escaped. So the replay child's
 * own kernels (drawing the inputs: kv_*) take no profiling passes. Returns 0 with out filled,
 * -1 (out empty) when there is no name or the filter would not fit in cap: then profile all. */
int wk_ncu_kernel_filter(const cJSON *plans, char *out, size_t cap);

/* Parses ncu's `--csv --print-units base` output (other lines, ==PROF== and the like, are
 * skipped). *kernels: one object per profiled kernel in the order ncu numbered them,
 * {"id": n, "name": "copy(const float4 *, ...)", "metrics": {"dram__bytes_read.sum": 123, ...}};
 * values "n/a" are left out, thousands separators are dropped, scaled units (Kbyte, usecond)
 * are brought to bytes and nanoseconds. KEVO_E_PARSE when no header row is found (then the
 * text holds no profile at all). The caller frees *kernels. */
int wk_ncu_parse(const char *text, cJSON **kernels, kevo_error *err);

/* The metric rows of ncu's CSV in text that are complete lines and not of the child's own
 * kv_* kernels: the CSV holds a kernel's whole profile once it has one row per metric of the
 * set (KEVO_PROFILE_EARLY_READ reads it then, docs/profile.md "Cost"). */
int wk_ncu_rows(const char *text);

/* Why ncu could not profile, from what it printed: fills reason with a short word
 * ("permission", "unsupported", "no_kernels", "failed") and why with one line naming ncu's own
 * message. Returns 1 when the text holds an ncu error, else 0 (why then says nothing useful). */
int wk_ncu_failure(const char *text, char reason[32], char *why, size_t whylen);

/* The ncu to run: $KEVO_NCU, else `ncu` on PATH, else the toolkit's default location. Fills
 * path; 0 when it exists and is executable, -1 (path holds what was tried) when not. */
int wk_ncu_find(char *path, size_t len);

#endif
