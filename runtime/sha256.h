/* sha256.h: SHA-256 (FIPS 180-4), for content hashes (compile cache keys, sources, requests). */
#ifndef KEVO_SHA256_H
#define KEVO_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* A content hash as text: 64 lowercase hex digits and the NUL. Every hash kevo stores or
 * compares (compile cache keys, request hashes, reference cache keys) is one of these. */
enum { KEVO_HASH_HEX = 65 };

typedef struct kevo_sha256 {
  uint32_t h[8];
  uint64_t total;
  unsigned char block[64];
  size_t fill;
} kevo_sha256;

void kevo_sha256_init(kevo_sha256 *s);
void kevo_sha256_update(kevo_sha256 *s, const void *data, size_t len);
void kevo_sha256_final(kevo_sha256 *s, unsigned char digest[32]);
/* One-shot: the lowercase hex digest of data into hex (KEVO_HASH_HEX bytes with the NUL). */
void kevo_sha256_hex(const void *data, size_t len, char hex[KEVO_HASH_HEX]);
/* Finishes s and writes its hex digest. */
void kevo_sha256_final_hex(kevo_sha256 *s, char hex[KEVO_HASH_HEX]);

#endif
