/* cuda_scan.h: reading the texts around a CUDA compile: a candidate's #include directives
 * (checked before NVRTC sees them) and NVRTC's log (diagnostics and ptxas resource lines).
 * Internal to the cuda*.c files. */
#ifndef KEVO_CUDA_SCAN_H
#define KEVO_CUDA_SCAN_H

#include <stddef.h>

#include "cuda_module.h"
#include "status.h"

/* Checks every #include (also %:include, include_next, import) and __has_include in src.
 * A candidate may include only headers that exist under one of incdirs (NULL-terminated),
 * named plainly: no absolute path, no "..", no backslash, no computed (macro) include; and,
 * by #include or __has_include, the names in shims (NULL-terminated; NVRTC is given those
 * in memory). Returns 0 when all are fine; else the 1-based line of the first refused one,
 * with the reason in why (a host header such as <torch/extension.h> is named as one). NVRTC
 * would otherwise read "foo.h" from the working directory and any absolute path it is given. */
int cuda_scan_includes(const char *src, size_t len, const char *const incdirs[],
                       const char *const shims[], char *why, size_t whylen);

/* Parses NVRTC's log into m->diags (lines of file `name` are the candidate's own; others
 * keep line 0 and name their file in the message) and m->kernels (from ptxas -v lines).
 * Returns KEVO_OK or KEVO_E_NOMEM. Appends to what m already holds. */
int cuda_scan_log(const char *log, const char *name, cuda_module *m);

/* Does the log hold at least one error diagnostic? */
int cuda_scan_has_error(const cuda_module *m);

/* A copy of log without the ptxas info lines (their content is in m->kernels), capped at
 * cap bytes and marked as truncated past it. NULL when out of memory. */
char *cuda_scan_clean_log(const char *log, size_t cap);

#endif
