#include "buf.h"

#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void kevo_buf_init(kevo_buf *b, size_t cap) {
  b->data = NULL;
  b->len = b->alloc = 0;
  b->cap = cap ? cap : KEVO_BUF_DEFAULT_CAP;
}

static int buf_reserve(kevo_buf *b, size_t extra) {
  if (!b->cap) b->cap = KEVO_BUF_DEFAULT_CAP;
  if (extra > b->cap || b->len > b->cap - extra) return KEVO_E_NOMEM;
  size_t need = b->len + extra + 1;
  if (need <= b->alloc) return KEVO_OK;
  size_t n = b->alloc ? b->alloc : 256;
  while (n < need)
    n *= 2;
  if (n > b->cap + 1) n = b->cap + 1;
  char *p = realloc(b->data, n);
  if (!p) return KEVO_E_NOMEM;
  b->data = p;
  b->alloc = n;
  return KEVO_OK;
}

int kevo_buf_append(kevo_buf *b, const void *p, size_t n) {
  int rc = buf_reserve(b, n);
  if (rc) return rc;
  if (n) memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
  return KEVO_OK;
}

/* Length of the valid UTF-8 sequence at u[0..n), or 0 if it is not one (overlong forms and
 * surrogates are let through: a terminal shows them as replacement characters). */
static size_t utf8_seq(const unsigned char *u, size_t n) {
  size_t len = u[0] < 0xc2 ? 0 : u[0] < 0xe0 ? 2 : u[0] < 0xf0 ? 3 : u[0] < 0xf5 ? 4 : 0;
  if (!len || len > n) return 0;
  for (size_t k = 1; k < len; k++)
    if ((u[k] & 0xc0) != 0x80) return 0;
  return len;
}

int kevo_buf_put_printable(kevo_buf *b, const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t run = 0, i = 0; /* run: bytes before i not yet appended */
  while (i < n) {
    unsigned c = u[i];
    size_t len = c < 0x80 ? 1 : utf8_seq(u + i, n - i);
    int ctl = (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f;
    int c1 = len == 2 && c == 0xc2 && u[i + 1] <= 0x9f; /* U+0080..U+009F */
    int bidi = len == 3 && c == 0xe2 && /* U+202A..U+202E, U+2066..U+2069: reorder the line */
               ((u[i + 1] == 0x80 && u[i + 2] >= 0xaa && u[i + 2] <= 0xae) ||
                (u[i + 1] == 0x81 && u[i + 2] >= 0xa6 && u[i + 2] <= 0xa9));
    if (len && !ctl && !c1 && !bidi) {
      run += len;
      i += len;
      continue;
    }
    if (kevo_buf_append(b, s + i - run, run)) return KEVO_E_NOMEM;
    run = 0;
    size_t bad = bidi ? 3 : c1 ? 2 : 1; /* or a byte that starts no valid sequence */
    for (size_t k = 0; k < bad; k++)
      if (kevo_buf_printf(b, "\\%03o", u[i + k])) return KEVO_E_NOMEM;
    i += bad;
  }
  return kevo_buf_append(b, s + n - run, run);
}

int kevo_buf_puts(kevo_buf *b, const char *s) {
  return kevo_buf_append(b, s, strlen(s));
}

int kevo_buf_printf(kevo_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return KEVO_E_INTERNAL;
  int rc = buf_reserve(b, (size_t)n);
  if (rc) return rc;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return KEVO_OK;
}

void kevo_buf_reset(kevo_buf *b) {
  b->len = 0;
  if (b->data) b->data[0] = '\0';
}

char *kevo_buf_steal(kevo_buf *b, size_t *len) {
  char *p = b->data;
  if (len) *len = b->len;
  if (!p) p = calloc(1, 1);
  b->data = NULL;
  b->len = b->alloc = 0;
  return p;
}

void kevo_buf_free(kevo_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->alloc = 0;
}

static const char *file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a plain file";
}

static int not_regular(kevo_error *err, const char *path, const char *why) {
  return kevo_fail(err, KEVO_E_IO, "%s: is not a regular file (%s)", path, why);
}

int kevo_regular_file(const char *path, kevo_error *err) {
  struct stat st;
  if (stat(path, &st) != 0)
    return errno == ELOOP ? not_regular(err, path, "a symbolic link loop")
                          : kevo_fail(err, KEVO_E_IO, "%s: %s", path, strerror(errno));
  return S_ISREG(st.st_mode) ? KEVO_OK : not_regular(err, path, file_kind(st.st_mode));
}

int kevo_read_file(const char *path, kevo_buf *b, kevo_error *err) {
  /* Checked before opening (opening a device can act on it) and again on the open file (the
   * path may have changed between); O_NONBLOCK so that a FIFO swapped in never blocks open. */
  int rc = kevo_regular_file(path, err);
  if (rc) return rc;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return kevo_fail(err, KEVO_E_IO, "%s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    rc = kevo_fail(err, KEVO_E_IO, "%s: %s", path, strerror(errno));
    close(fd);
    return rc;
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return not_regular(err, path, file_kind(st.st_mode));
  }
  size_t cap = b->cap ? b->cap : KEVO_BUF_DEFAULT_CAP;
  if ((uint64_t)st.st_size > cap || b->len > cap - (size_t)st.st_size) {
    close(fd); /* refused before a byte is read */
    return kevo_fail(err, KEVO_E_NOMEM, "%s: larger than %zu bytes", path, cap);
  }
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    close(fd);
    return kevo_fail(err, KEVO_E_IO, "%s: %s", path, strerror(errno));
  }
  rc = kevo_read_stream(f, path, b, err);
  fclose(f);
  return rc;
}

int kevo_read_stream(FILE *f, const char *name, kevo_buf *b, kevo_error *err) {
  char chunk[65536];
  size_t n;
  int rc = KEVO_OK;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    rc = kevo_buf_append(b, chunk, n);
    if (rc) return kevo_fail(err, rc, "%s: larger than %zu bytes", name, b->cap);
  }
  if (ferror(f)) return kevo_fail(err, KEVO_E_IO, "%s: read error", name);
  return b->data ? KEVO_OK : kevo_buf_append(b, "", 0);
}
