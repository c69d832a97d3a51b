#include "check.h"
#include "proto.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
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

  /* a reader that is gone: an error, not a SIGPIPE that ends this process */
  CHECK(pipe(p) == 0);
  close(p[0]);
  h = cJSON_CreateObject();
  CHECK(kevo_frame_write(p[1], h, NULL, 0, &err) == KEVO_E_IO);
  CHECK_STR_CONTAINS(err.msg, "closed the pipe");
  close(p[1]);

  /* a reader that takes nothing: a full non-blocking pipe times out */
  CHECK(pipe(p) == 0);
  CHECK(fcntl(p[1], F_SETFL, O_NONBLOCK) == 0);
  static char big[1 << 20];
  kevo_blob large = {big, sizeof big};
  CHECK(kevo_frame_send(p[1], h, &large, 1, 100, &err) == KEVO_E_TIMEOUT);
  cJSON_Delete(h);
  close(p[0]);
  close(p[1]);

  /* text frames (the strategy process's link): the same wire format, read back as text */
  CHECK(pipe(p) == 0);
  const char *msg = "{\"op\":\"call\",\"m\":\"evaluate\"}";
  CHECK(kevo_frame_send_text(p[1], msg, strlen(msg), 1000, &err) == KEVO_OK);
  char *text = NULL;
  size_t len = 0;
  CHECK(kevo_frame_read_text(p[0], &text, &len, 1 << 20, 1000, &err) == KEVO_OK);
  CHECK(text && len == strlen(msg) && strcmp(text, msg) == 0);
  free(text);
  CHECK(kevo_frame_send_text(p[1], msg, strlen(msg), 1000, &err) == KEVO_OK);
  CHECK(kevo_frame_read(p[0], &f, 1000, &err) == KEVO_OK); /* a plain frame with no blobs */
  CHECK(f.nblobs == 0 && strcmp(cJSON_GetObjectItem(f.header, "m")->valuestring, "evaluate") == 0);
  kevo_frame_free(&f);
  /* over the reader's cap: refused before any allocation */
  CHECK(kevo_frame_send_text(p[1], msg, strlen(msg), 1000, &err) == KEVO_OK);
  CHECK(kevo_frame_read_text(p[0], &text, &len, 8, 1000, &err) == KEVO_E_PARSE);
  CHECK(text == NULL);
  CHECK(kevo_frame_send_text(p[1], "", 0, 1000, &err) != KEVO_OK); /* empty: not a frame */
  close(p[0]);
  close(p[1]);

  /* the link's spin: none until allowed (the host's gate); a miss makes the next waits sleep
   * at once, 2, 4 ... 64 of them; a hit ends the backoff */
  kevo_link_spin sp = {0};
  CHECK(kevo_link_spin_until(&sp) == 0 && sp.waits == 1 && sp.spins == 0);
  sp.allowed = 1;
  CHECK(kevo_link_spin_until(&sp) > kevo_link_now_ns() && sp.spins == 1);
  kevo_link_spun(&sp, 0);
  CHECK(kevo_link_spin_until(&sp) == 0 && kevo_link_spin_until(&sp) == 0);
  CHECK(kevo_link_spin_until(&sp) > 0);
  for (int miss = 0; miss < 10; miss++)
    kevo_link_spun(&sp, 0);
  int slept = 0;
  while (kevo_link_spin_until(&sp) == 0)
    slept++;
  CHECK(slept == KEVO_LINK_SPIN_BACKOFF_MAX);
  kevo_link_spun(&sp, 1);
  CHECK(sp.hits == 1 && kevo_link_spin_until(&sp) > 0);
  sp.allowed = 0;
  CHECK(kevo_link_spin_until(&sp) == 0);
  CHECK_DONE();
}
