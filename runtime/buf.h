/* buf.h: a growable byte buffer with a hard cap. Going past the cap is an error
 * (KEVO_E_NOMEM), never a crash or a silent truncation. Always NUL-terminated. */
#ifndef KEVO_BUF_H
#define KEVO_BUF_H

#include <stddef.h>
#include <stdio.h>

typedef struct kevo_buf {
  char *data;
  size_t len;
  size_t alloc;
  size_t cap; /* most bytes it may ever hold; 0 means KEVO_BUF_DEFAULT_CAP */
} kevo_buf;

#define KEVO_BUF_DEFAULT_CAP ((size_t)64 << 20)

void kevo_buf_init(kevo_buf *b, size_t cap);
/* Append n bytes; KEVO_E_NOMEM past the cap or on allocation failure (buffer unchanged). */
int kevo_buf_append(kevo_buf *b, const void *p, size_t n);
int kevo_buf_puts(kevo_buf *b, const char *s);
int kevo_buf_printf(kevo_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s[0..n) with every byte a terminal would act on made visible: C0 controls other than
 * tab and newline (ESC, CR, BS, ...), DEL, UTF-8 encoded C1 controls (U+0080..U+009F, 8-bit
 * CSI among them), the bidirectional overrides and isolates (U+202A..U+202E, U+2066..U+2069)
 * and bytes that start no valid UTF-8 sequence become "\ooo" escapes of their bytes. For text kevo
 * shows but did not write (a strategy's log lines and descriptions, a model's or a file's words),
 * so none of it can move the cursor, rewrite a line or retitle the user's terminal. */
int kevo_buf_put_printable(kevo_buf *b, const char *s, size_t n);
void kevo_buf_reset(kevo_buf *b);
/* Hands the data to the caller (who frees it) and leaves the buffer empty. */
char *kevo_buf_steal(kevo_buf *b, size_t *len);
void kevo_buf_free(kevo_buf *b);

/* The most bytes of a text file kevo reads whole: a kernel's source, a launch file, a cache
 * entry's JSON. A larger file fails with KEVO_E_NOMEM, never a truncated read. */
#define KEVO_TEXT_FILE_CAP ((size_t)16 << 20)

/* KEVO_OK when path names a regular file (symbolic links followed); otherwise KEVO_E_IO with
 * "PATH: is not a regular file (a FIFO)" (a directory, a device, a socket, a symbolic link
 * loop) or "PATH: <strerror>". Never opens the path, so never blocks. */
struct kevo_error;
int kevo_regular_file(const char *path, struct kevo_error *err);

/* Reads a whole regular file into b (capped). Refuses anything else at once, as
 * kevo_regular_file says, and a file larger than the cap before reading it (KEVO_E_NOMEM,
 * "PATH: larger than N bytes"). KEVO_E_IO with the reason in err on other failures. */
int kevo_read_file(const char *path, kevo_buf *b, struct kevo_error *err);

/* Reads what is left of an open stream into b (capped); name is for messages. For the rare
 * reader that takes a pipe on purpose (kevo script <(...)); files go through kevo_read_file. */
int kevo_read_stream(FILE *f, const char *name, kevo_buf *b, struct kevo_error *err);

#endif
