/*
 * hb_hash.h: the one hash function of hibar, FNV-1a (Fowler/Noll/Vo), in its 32-bit form over
 * bytes and strings and its 64-bit form over 32-bit words (one multiply a word: a set of rank
 * numbers). The values are part of the protocol (the cluster tag in HELLO, the segment header's
 * checksum, a subset barrier's id, which the daemon computes again): never change them.
 */
#ifndef HB_HASH_H
#define HB_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HB_FNV32_BASIS 2166136261u
#define HB_FNV32_PRIME 16777619u
#define HB_FNV64_BASIS 14695981039346656037ull
#define HB_FNV64_PRIME 1099511628211ull

/* FNV-1a 32 of n bytes at p, continuing from h (HB_FNV32_BASIS to start). */
static inline uint32_t hb_fnv32(uint32_t h, const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * HB_FNV32_PRIME;
    return h;
}

/* FNV-1a 32 of a string (NULL hashes as ""). */
static inline uint32_t hb_fnv32_str(const char *s)
{
    uint32_t h = HB_FNV32_BASIS;
    for (; s != NULL && *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * HB_FNV32_PRIME;
    return h;
}

/* One step of FNV-1a 64 over 32-bit words: h (HB_FNV64_BASIS to start) with word w. */
static inline uint64_t hb_fnv64_u32(uint64_t h, uint32_t w)
{
    return (h ^ w) * HB_FNV64_PRIME;
}

#endif
