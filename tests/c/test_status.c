#include "buf.h"
#include "check.h"
#include "status.h"

int main(void) {
  for (int s = 0; s < KEVO_STATUS_COUNT; s++) {
    CHECK(strcmp(kevo_strerror(s), "unknown error") != 0);
    CHECK(strncmp(kevo_code(s), s ? "E_" : "OK", 2) == 0);
  }
  CHECK(strcmp(kevo_code(KEVO_E_COMPILE), "E_COMPILE") == 0);
  CHECK(strcmp(kevo_code(999), "E_UNKNOWN") == 0);

  kevo_error err = {0};
  CHECK(kevo_fail(&err, KEVO_E_PARSE, "x.yaml:%d:%d: bad", 3, 7) == KEVO_E_PARSE);
  CHECK(err.status == KEVO_E_PARSE);
  CHECK(kevo_fail_prefix(&err, "loading %s: ", "r") == KEVO_E_PARSE);
  CHECK(strcmp(err.msg, "loading r: x.yaml:3:7: bad") == 0);

  kevo_buf b;
  kevo_buf_init(&b, 10);
  CHECK(kevo_buf_puts(&b, "hello") == KEVO_OK);
  CHECK(kevo_buf_printf(&b, "%d", 12345) == KEVO_OK);
  CHECK(b.len == 10 && strcmp(b.data, "hello12345") == 0);
  CHECK(kevo_buf_puts(&b, "!") == KEVO_E_NOMEM); /* past the cap: an error, data intact */
  CHECK(strcmp(b.data, "hello12345") == 0);
  kevo_buf_free(&b);

  /* printable: terminal controls, 8-bit CSI, bidi overrides and broken UTF-8 become \ooo;
   * text, tabs, newlines and valid UTF-8 (é, ✓) pass as they are */
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"plain\ttext\n", "plain\ttext\n"},
      {"\x1b[2Jx\r\a\b\x7f", "\\033[2Jx\\015\\007\\010\\177"},
      {"caf\xc3\xa9 \xe2\x9c\x93", "caf\xc3\xa9 \xe2\x9c\x93"},
      {"\xc2\x9b"
       "31m",
       "\\302\\23331m"},
      {"a\xe2\x80\xae"
       "b\xe2\x81\xa6"
       "c",
       "a\\342\\200\\256b\\342\\201\\246c"},
      {"\xff\xc3(\xe2\x9c", "\\377\\303(\\342\\234"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kevo_buf_init(&b, 0);
    CHECK(kevo_buf_put_printable(&b, cases[i].in, strlen(cases[i].in)) == KEVO_OK);
    CHECK(b.data && strcmp(b.data, cases[i].out) == 0);
    kevo_buf_free(&b);
  }

  kevo_buf_init(&b, 0);
  CHECK(kevo_read_file("/nonexistent/file", &b, &err) == KEVO_E_IO);
  CHECK_STR_CONTAINS(err.msg, "/nonexistent/file");
  kevo_buf_free(&b);
  CHECK_DONE();
}
