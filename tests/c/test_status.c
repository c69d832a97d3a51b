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

  kevo_buf_init(&b, 0);
  CHECK(kevo_read_file("/nonexistent/file", &b, &err) == KEVO_E_IO);
  CHECK_STR_CONTAINS(err.msg, "/nonexistent/file");
  kevo_buf_free(&b);
  CHECK_DONE();
}
