#include "check.h"
#include "proto.h"

#include <cjson/cJSON.h>
#include <unistd.h>

int main(void) {
  int p[2];
  CHECK(pipe(p) == 0);
  kevo_error err = {0};
  cJSON *h = cJSON_CreateObject();
  cJSON_AddStringToObject(h, "op", "hello");
  kevo_blob blobs[2] = {{"abc", 3}, {"", 0}};
  CHECK(kevo_frame_write(p[1], h, blobs, 2, &err) == KEVO_OK);
  cJSON_Delete(h);
  kevo_frame f;
  CHECK(kevo_frame_read(p[0], &f, 1000, &err) == KEVO_OK);
  CHECK(strcmp(cJSON_GetObjectItem(f.header, "op")->valuestring, "hello") == 0);
  CHECK(f.nblobs == 2 && f.blobs[0].size == 3 && memcmp(f.blobs[0].data, "abc", 3) == 0);
  CHECK(f.blobs[1].size == 0);
  kevo_frame_free(&f);

  /* nothing to read: a timeout, not a hang */
  CHECK(kevo_frame_read(p[0], &f, 50, &err) == KEVO_E_TIMEOUT);
  /* a bogus length */
  CHECK(write(p[1], "\xff\xff\xff\x7f", 4) == 4);
  CHECK(kevo_frame_read(p[0], &f, 1000, &err) == KEVO_E_PARSE);
  /* a header that is not an object */
  CHECK(write(p[1], "\x03\x00\x00\x00[1]", 7) == 7);
  CHECK(kevo_frame_read(p[0], &f, 1000, &err) == KEVO_E_PARSE);
  /* peer gone mid-frame */
  CHECK(write(p[1], "\x10\x00\x00\x00{", 5) == 5);
  close(p[1]);
  CHECK(kevo_frame_read(p[0], &f, 1000, &err) == KEVO_E_IO);
  close(p[0]);
  CHECK_DONE();
}
