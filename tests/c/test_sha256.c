#include "check.h"
#include "sha256.h"

int main(void) {
  char hex[KEVO_HASH_HEX];
  kevo_sha256_hex("", 0, hex);
  CHECK(strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0);
  kevo_sha256_hex("abc", 3, hex);
  CHECK(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0);
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  kevo_sha256_hex(two, strlen(two), hex);
  CHECK(strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1") == 0);
  /* streaming in odd pieces gives the same digest as one shot */
  kevo_sha256 s;
  kevo_sha256_init(&s);
  for (size_t i = 0; i < strlen(two); i += 7)
    kevo_sha256_update(&s, two + i, strlen(two) - i < 7 ? strlen(two) - i : 7);
  char hex2[KEVO_HASH_HEX];
  kevo_sha256_final_hex(&s, hex2);
  CHECK(strcmp(hex, hex2) == 0);
  CHECK_DONE();
}
