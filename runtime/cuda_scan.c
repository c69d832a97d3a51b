/* cuda_scan.c: the candidate's #include directives, and NVRTC's log. See cuda_scan.h. */
#include "cuda_scan.h"

#include "buf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { SCAN_MAX_DIAGS = 200, SCAN_MAX_KERNELS = 256, SCAN_MAX_MSG = 2048 };

/* ---- includes ---------------------------------------------------------------------------- */

/* The source with backslash-newline splices removed, and where each splice was, so a
 * position in the spliced text maps back to a line of the original. */
typedef struct spliced {
  char *t;
  size_t n;
  size_t *at; /* spliced offsets where a splice was removed */
  size_t nat;
} spliced;

static int splice(const char *src, size_t len, spliced *sp) {
  memset(sp, 0, sizeof *sp);
  sp->t = malloc(len + 1);
  size_t cap = 16;
  sp->at = malloc(cap * sizeof *sp->at);
  if (!sp->t || !sp->at) return -1;
  for (size_t i = 0; i < len; i++) {
    if (src[i] == '\\' && i + 1 < len && (src[i + 1] == '\n' || src[i + 1] == '\r')) {
      size_t j = i + 1;
      if (src[j] == '\r' && j + 1 < len && src[j + 1] == '\n') j++;
      if (sp->nat == cap) {
        size_t *grown = realloc(sp->at, 2 * cap * sizeof *sp->at);
        if (!grown) return -1;
        sp->at = grown;
        cap *= 2;
      }
      sp->at[sp->nat++] = sp->n;
      i = j;
      continue;
    }
    sp->t[sp->n++] = src[i];
  }
  sp->t[sp->n] = '\0';
  return 0;
}

static int spliced_line(const spliced *sp, size_t pos) {
  int line = 1;
  for (size_t i = 0; i < pos && i < sp->n; i++)
    line += sp->t[i] == '\n';
  for (size_t k = 0; k < sp->nat && sp->at[k] <= pos; k++)
    line++;
  return line;
}

static int is_ident(int c) {
  return isalnum(c) || c == '_';
}

/* Skips blanks and comments on the current line; returns the new position. */
static size_t skip_blank(const char *t, size_t n, size_t i) {
  for (;;) {
    while (i < n && (t[i] == ' ' || t[i] == '\t' || t[i] == '\v' || t[i] == '\f'))
      i++;
    if (i + 1 < n && t[i] == '/' && t[i + 1] == '*') {
      const char *end = strstr(t + i + 2, "*/");
      i = end ? (size_t)(end - t) + 2 : n;
    } else {
      return i;
    }
  }
}

/* Past a quoted literal starting at t[i] (a quote); stops at an unescaped newline. */
static size_t skip_quoted(const char *t, size_t n, size_t i) {
  char q = t[i++];
  while (i < n && t[i] != q && t[i] != '\n')
    i += t[i] == '\\' && i + 1 < n ? 2 : 1;
  return i < n && t[i] == q ? i + 1 : i;
}

/* Past a raw string R"delim( ... )delim" whose quote is t[i]. */
static size_t skip_raw(const char *t, size_t n, size_t i) {
  size_t d = i + 1;
  while (d < n && t[d] != '(' && d - i <= 17)
    d++;
  if (d >= n || t[d] != '(') return skip_quoted(t, n, i);
  char close[24];
  size_t dl = d - i - 1;
  close[0] = ')';
  memcpy(close + 1, t + i + 1, dl);
  close[dl + 1] = '"';
  close[dl + 2] = '\0';
  const char *end = strstr(t + d + 1, close);
  return end ? (size_t)(end - t) + dl + 2 : n;
}

static int header_exists(const char *const incdirs[], const char *name) {
  char path[4096];
  struct stat st;
  for (const char *const *d = incdirs; *d; d++) {
    snprintf(path, sizeof path, "%s/%s", *d, name);
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) return 1;
  }
  return 0;
}

static int is_shim(const char *const shims[], const char *name) {
  for (const char *const *s = shims; s && *s; s++)
    if (!strcmp(*s, name)) return 1;
  return 0;
}

/* Headers of host code: what a PyTorch extension or a host program includes. A kernel that
 * names one was written with its host side, which kevo does not compile. */
static int is_host_header(const char *name) {
  static const char *const dirs[] = {"torch/", "ATen/", "c10/", "pybind11/", NULL};
  static const char *const names[] = {
      "Python.h", "iostream", "vector", "string", "map",   "unordered_map", "memory", "stdexcept",
      "sstream",  "fstream",  "chrono", "thread", "mutex", "functional",    NULL};
  for (const char *const *d = dirs; *d; d++)
    if (!strncmp(name, *d, strlen(*d))) return 1;
  for (const char *const *h = names; *h; h++)
    if (!strcmp(name, *h)) return 1;
  return 0;
}

/* Checks the operand of an include at t[i]; 0 when allowed, else fills why. */
static int check_operand(const char *t, size_t n, size_t i, const char *what,
                         const char *const incdirs[], const char *const shims[], char *why,
                         size_t whylen) {
  char close = i < n && t[i] == '<' ? '>' : i < n && t[i] == '"' ? '"' : 0;
  if (!close) {
    snprintf(why, whylen,
             "%s with a computed (macro) operand is not allowed: name a CUDA "
             "toolkit header in <> or \"\"",
             what);
    return -1;
  }
  size_t end = i + 1;
  while (end < n && t[end] != close && t[end] != '\n')
    end++;
  char name[256];
  size_t nl = end - i - 1;
  if (end >= n || t[end] != close || nl == 0 || nl >= sizeof name) {
    snprintf(why, whylen, "%s: malformed header name", what);
    return -1;
  }
  memcpy(name, t + i + 1, nl);
  name[nl] = '\0';
  const char *reason = NULL;
  if (name[0] == '/')
    reason = "absolute paths are not allowed";
  else if (strstr(name, ".."))
    reason = "paths with '..' are not allowed";
  else if (strchr(name, '\\') || strchr(name, ':'))
    reason = "backslashes and colons are not allowed";
  else if (shims && is_shim(shims, name) && strcmp(what, "#include_next") &&
           strcmp(what, "#import"))
    return 0;
  else if (is_host_header(name))
    reason = "a host header: kevo compiles device code only (NVRTC, no host compiler); "
             "drop it and every host function (a PyTorch wrapper, main): kevo launches the "
             "kernels itself, as the kevo:launch block says";
  else if (!header_exists(incdirs, name) && close == '"')
    reason = "no such header: kevo compiles the one source file you send, so put what you need "
             "from your own header into that source (the CUDA toolkit's headers, such as "
             "cuda_fp16.h, and cmath, cfloat, climits, cstdint, limits, type_traits may be "
             "included)";
  else if (!header_exists(incdirs, name))
    reason = "not a CUDA toolkit header (candidates may include the toolkit's headers, "
             "such as cuda_fp16.h or cub/block/block_reduce.cuh, and the C and C++ headers "
             "kevo provides: cmath, cfloat, climits, cstdint, cstddef, cassert, limits, "
             "type_traits, utility, algorithm)";
  if (!reason) return 0;
  snprintf(why, whylen, "%s %c%s%c: %s", what, t[i], name, close, reason);
  return -1;
}

int cuda_scan_includes(const char *src, size_t len, const char *const incdirs[],
                       const char *const shims[], char *why, size_t whylen) {
  spliced sp;
  if (splice(src, len, &sp)) {
    free(sp.t);
    free(sp.at);
    snprintf(why, whylen, "out of memory scanning the source");
    return 1;
  }
  const char *t = sp.t;
  size_t n = sp.n, i = 0;
  int bad_line = 0;
  while (i < n && !bad_line) {
    char c = t[i];
    if (c == '/' && i + 1 < n && t[i + 1] == '/') {
      while (i < n && t[i] != '\n')
        i++;
    } else if (c == '/' && i + 1 < n && t[i + 1] == '*') {
      i = skip_blank(t, n, i);
    } else if (c == '"' || c == '\'') {
      i = skip_quoted(t, n, i);
    } else if (c == '#' || (c == '%' && i + 1 < n && t[i + 1] == ':')) {
      size_t at = i;
      size_t j = skip_blank(t, n, i + (c == '#' ? 1 : 2));
      size_t k = j;
      while (k < n && is_ident((unsigned char)t[k]))
        k++;
      static const char *const kinds[] = {"include", "include_next", "import", NULL};
      for (const char *const *w = kinds; *w; w++) {
        if (k - j == strlen(*w) && memcmp(t + j, *w, k - j) == 0) {
          char what[32];
          snprintf(what, sizeof what, "#%s", *w);
          if (check_operand(t, n, skip_blank(t, n, k), what, incdirs, shims, why, whylen))
            bad_line = spliced_line(&sp, at);
        }
      }
      i = k > i + 1 ? k : i + 1;
    } else if (isdigit((unsigned char)c) ||
               (c == '.' && i + 1 < n && isdigit((unsigned char)t[i + 1]))) {
      /* a pp-number, so that digit separators (1'000) are not taken for char literals */
      while (i < n && (is_ident((unsigned char)t[i]) || t[i] == '.' || t[i] == '\'' ||
                       ((t[i] == '+' || t[i] == '-') && strchr("eEpP", t[i - 1]))))
        i++;
    } else if (is_ident((unsigned char)c)) {
      size_t k = i;
      while (k < n && is_ident((unsigned char)t[k]))
        k++;
      size_t idl = k - i;
      if (k < n && t[k] == '"' && t[k - 1] == 'R' &&
          (idl == 1 || (idl == 2 && strchr("uUL", t[i])) || (idl == 3 && t[i] == 'u'))) {
        i = skip_raw(t, n, k);
        continue;
      }
      if ((idl == 13 && memcmp(t + i, "__has_include", 13) == 0) ||
          (idl == 18 && memcmp(t + i, "__has_include_next", 18) == 0)) {
        size_t j = skip_blank(t, n, k);
        if (j < n && t[j] == '(') j = skip_blank(t, n, j + 1);
        if (check_operand(t, n, j, "__has_include", incdirs, shims, why, whylen))
          bad_line = spliced_line(&sp, i);
      }
      i = k;
    } else {
      i++;
    }
  }
  free(sp.t);
  free(sp.at);
  return bad_line;
}

/* ---- the log ----------------------------------------------------------------------------- */

static char *dup_range(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

static int add_diag(cuda_module *m, int line, int col, const char *sev, const char *msg,
                    size_t msglen) {
  if (m->ndiags >= SCAN_MAX_DIAGS) return 0;
  cuda_diag *grown = realloc(m->diags, (m->ndiags + 1) * sizeof *grown);
  if (!grown) return KEVO_E_NOMEM;
  m->diags = grown;
  cuda_diag *d = &m->diags[m->ndiags];
  memset(d, 0, sizeof *d);
  d->line = line;
  d->col = col;
  snprintf(d->severity, sizeof d->severity, "%s", sev);
  d->message = dup_range(msg, msglen < SCAN_MAX_MSG ? msglen : SCAN_MAX_MSG);
  if (!d->message) return KEVO_E_NOMEM;
  m->ndiags++;
  return 0;
}

static cuda_kernel_info *find_kernel(cuda_module *m, const char *name, size_t len) {
  for (size_t i = 0; i < m->nkernels; i++)
    if (strlen(m->kernels[i].name) == len && memcmp(m->kernels[i].name, name, len) == 0)
      return &m->kernels[i];
  return NULL;
}

static cuda_kernel_info *add_kernel(cuda_module *m, const char *name, size_t len) {
  cuda_kernel_info *k = find_kernel(m, name, len);
  if (k || m->nkernels >= SCAN_MAX_KERNELS) return k;
  cuda_kernel_info *grown = realloc(m->kernels, (m->nkernels + 1) * sizeof *grown);
  if (!grown) return NULL;
  m->kernels = grown;
  k = &m->kernels[m->nkernels];
  memset(k, 0, sizeof *k);
  k->registers = -1;
  k->name = dup_range(name, len);
  if (!k->name) return NULL;
  m->nkernels++;
  return k;
}

/* The quoted name in "... 'NAME' ..." after `prefix`, or NULL. */
static const char *quoted_after(const char *line, const char *prefix, size_t *len) {
  const char *p = strstr(line, prefix);
  if (!p) return NULL;
  p += strlen(prefix);
  const char *q = strchr(p, '\'');
  if (!q) return NULL;
  *len = (size_t)(q - p);
  return p;
}

/* ptxas -v lines: which entry is being compiled, its registers, shared memory and stack. */
static int scan_ptxas_info(cuda_module *m, const char *line, cuda_kernel_info **entry,
                           cuda_kernel_info **props) {
  size_t len;
  const char *name;
  if ((name = quoted_after(line, "Compiling entry function '", &len))) {
    *entry = add_kernel(m, name, len);
    if (!*entry) return KEVO_E_NOMEM;
    *props = NULL;
  } else if ((name = strstr(line, "Function properties for "))) {
    name += strlen("Function properties for ");
    *props = find_kernel(m, name, strcspn(name, " \r"));
  } else if (strstr(line, "bytes stack frame") && *props) {
    int frame, st, ld;
    if (sscanf(line, "ptxas . %d bytes stack frame, %d bytes spill stores, %d bytes spill loads",
               &frame, &st, &ld) == 3) {
      (*props)->local_bytes = frame;
      (*props)->spill_stores = st;
      (*props)->spill_loads = ld;
    }
  } else if ((name = strstr(line, "Used ")) && *entry) {
    int regs;
    if (sscanf(name, "Used %d registers", &regs) == 1) (*entry)->registers = regs;
    const char *smem = strstr(line, " bytes smem");
    if (smem) {
      const char *p = smem;
      while (p > line && isdigit((unsigned char)p[-1]))
        p--;
      (*entry)->shared_static = atoi(p);
    }
  }
  return 0;
}

/* "file(12): error #20-D: message" -> file, line, severity, message; 0 when it is not one. */
static int parse_header(const char *line, size_t *flen, int *lno, char *sev, size_t sevlen,
                        const char **msg) {
  const char *close = strstr(line, "): ");
  while (close) {
    const char *open = close;
    while (open > line && isdigit((unsigned char)open[-1]))
      open--;
    if (open < close && open > line && open[-1] == '(') {
      const char *s = close + 3;
      static const char *const kinds[] = {
          "catastrophic error", "internal error", "error", "warning", "remark", "note", NULL};
      for (const char *const *k = kinds; *k; k++) {
        size_t kl = strlen(*k);
        if (strncmp(s, *k, kl) == 0 && (s[kl] == ':' || s[kl] == ' ')) {
          const char *colon = strstr(s + kl, ": ");
          if (!colon) return 0;
          *flen = (size_t)(open - 1 - line);
          *lno = atoi(open);
          snprintf(sev, sevlen, "%s",
                   strstr(*k, "error")         ? "error"
                   : strcmp(*k, "remark") == 0 ? "note"
                                               : *k);
          *msg = colon + 2;
          return 1;
        }
      }
    }
    close = strstr(close + 1, "): ");
  }
  return 0;
}

static int is_caret_line(const char *line, size_t len, size_t *col) {
  size_t carets = 0, at = 0;
  for (size_t i = 0; i < len; i++) {
    if (line[i] == '^') {
      carets++;
      at = i;
    } else if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r') {
      return 0;
    }
  }
  *col = at;
  return carets == 1;
}

int cuda_scan_log(const char *log, const char *name, cuda_module *m) {
  if (!log) return 0;
  cuda_kernel_info *entry = NULL, *props = NULL;
  const char *p = log;
  while (*p) {
    size_t len = strcspn(p, "\n");
    char line[4096];
    snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
    const char *next = p[len] ? p + len + 1 : p + len;
    size_t flen;
    int lno, rc = 0;
    char sev[16];
    const char *msg;
    if (strncmp(line, "ptxas", 5) == 0) {
      const char *colon = strstr(line, ": ");
      if (strstr(line, "ptxas info") == line || !colon)
        rc = scan_ptxas_info(m, line, &entry, &props);
      else if (strstr(line, "ptxas error") == line || strstr(line, "ptxas fatal") == line)
        rc = add_diag(m, 0, 0, "error", line, strlen(line));
      else if (strstr(line, "ptxas warning") == line)
        rc = add_diag(m, 0, 0, "warning", line, strlen(line));
    } else if (parse_header(line, &flen, &lno, sev, sizeof sev, &msg)) {
      /* the block under a header: the echoed source line with a caret under it, and any
       * context lines ("detected during instantiation of ..."), up to a blank line */
      kevo_buf text;
      kevo_buf_init(&text, SCAN_MAX_MSG);
      int own = flen == strlen(name) && strncmp(line, name, flen) == 0;
      if (!own) kevo_buf_printf(&text, "%.*s(%d): ", (int)flen, line, lno);
      kevo_buf_puts(&text, msg);
      int col = 0;
      while (*next && *next != '\n') {
        size_t nl = strcspn(next, "\n"), cidx;
        const char *after = next[nl] ? next + nl + 1 : next + nl;
        size_t al = strcspn(after, "\n");
        if (*after && is_caret_line(after, al, &cidx)) {
          col = (int)(cidx >= 2 ? cidx - 2 : cidx) + 1;
          next = after[al] ? after + al + 1 : after + al;
          continue;
        }
        char cont[1024];
        snprintf(cont, sizeof cont, "%.*s", (int)(nl < sizeof cont ? nl : sizeof cont - 1), next);
        size_t fl2;
        int ln2;
        char sev2[16];
        const char *msg2;
        if (parse_header(cont, &fl2, &ln2, sev2, sizeof sev2, &msg2)) break;
        const char *trim = cont + strspn(cont, " \t");
        if (*trim) kevo_buf_printf(&text, "\n  %s", trim);
        next = after;
      }
      rc = add_diag(m, own ? lno : 0, own ? col : 0, sev, text.data ? text.data : "", text.len);
      kevo_buf_free(&text);
    } else if (strncmp(line, "nvrtc: error", 12) == 0 || strncmp(line, "error: ", 7) == 0) {
      rc = add_diag(m, 0, 0, "error", line, strlen(line));
    }
    if (rc) return rc;
    p = next;
  }
  return 0;
}

int cuda_scan_has_error(const cuda_module *m) {
  for (size_t i = 0; i < m->ndiags; i++)
    if (strcmp(m->diags[i].severity, "error") == 0) return 1;
  return 0;
}

char *cuda_scan_clean_log(const char *log, size_t cap) {
  kevo_buf out;
  kevo_buf_init(&out, cap + 128);
  int truncated = 0;
  for (const char *p = log ? log : ""; *p;) {
    size_t len = strcspn(p, "\n");
    int info = strncmp(p, "ptxas info", 10) == 0 || strncmp(p, "ptxas         .", 16) == 0;
    if (!info && !truncated) {
      size_t room = out.len < cap ? cap - out.len : 0;
      size_t take = len + (p[len] == '\n');
      if (take > room) {
        take = room;
        truncated = 1;
      }
      if (kevo_buf_append(&out, p, take)) break;
    }
    p += len + (p[len] == '\n');
  }
  if (truncated) kevo_buf_printf(&out, "\n[log truncated at %zu bytes]\n", cap);
  if (!out.data) kevo_buf_append(&out, "", 0);
  size_t n;
  return kevo_buf_steal(&out, &n);
}
