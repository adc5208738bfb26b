/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The engine's test pattern (docs/dma-engine.md section 7), the one implementation of its
 * rule: a stream of little-endian 32-bit words, word n after seed s being s + n mod 2^32. The
 * pattern generator sends it, the checker compares with it; the libraries, the virtual board,
 * the tools and the tests all use these functions. Header-only C; mp_pattern_word() is also
 * callable from CUDA device code.
 */
#ifndef MPRACE_PATTERN_H
#define MPRACE_PATTERN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define MP_PATTERN_FN static inline __host__ __device__
#else
#define MP_PATTERN_FN static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Word n of the pattern that starts at seed. */
MP_PATTERN_FN uint32_t mp_pattern_word(uint32_t seed, uint64_t n)
{
	return seed + (uint32_t)n;
}

/* Byte b of the pattern's byte stream. */
MP_PATTERN_FN uint8_t mp_pattern_byte(uint32_t seed, uint64_t b)
{
	return (uint8_t)(mp_pattern_word(seed, b / 4) >> (8 * (b % 4)));
}

/* Word n in memory order (little-endian), for the whole-word paths below. */
static inline void mp_pattern_le(uint32_t seed, uint64_t n, uint8_t le[4])
{
	uint32_t w = mp_pattern_word(seed, n);

	le[0] = (uint8_t)w;
	le[1] = (uint8_t)(w >> 8);
	le[2] = (uint8_t)(w >> 16);
	le[3] = (uint8_t)(w >> 24);
}

/*
 * The whole-word paths below go a block of MP_PATTERN_BLOCK_WORDS words at a time: a loop of
 * fixed length without an early exit over words loaded or stored in host order, which compilers
 * vectorise at -O2 (about 3 times the word loops' speed on cached data). Only where host order
 * is the pattern's little-endian order; elsewhere the word loops below do all the work.
 */
#define MP_PATTERN_BLOCK_WORDS 64
#define MP_PATTERN_BLOCK_BYTES (4 * MP_PATTERN_BLOCK_WORDS)
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define MP_PATTERN_HOST_IS_LE 1
#else
#define MP_PATTERN_HOST_IS_LE 0
#endif

/* The bits in which the block at s (word-aligned stream offset pos) differs from the pattern:
 * 0 if it is the pattern. */
static inline uint32_t mp_pattern_block_diff(const uint8_t *s, uint64_t pos, uint32_t seed)
{
	const uint32_t first = mp_pattern_word(seed, pos / 4);
	uint32_t diff = 0;
	unsigned int i;

	for (i = 0; i < MP_PATTERN_BLOCK_WORDS; i++) {
		uint32_t w;

		memcpy(&w, s + 4 * i, 4);
		diff |= w ^ (first + i);
	}
	return diff;
}

/* Writes the n bytes of the stream that start at byte offset pos (any alignment) to dst. */
static inline void mp_pattern_fill(void *dst, size_t n, uint64_t pos, uint32_t seed)
{
	uint8_t *d = (uint8_t *)dst;
	size_t k = 0;

	for (; k < n && (pos + k) % 4; k++)
		d[k] = mp_pattern_byte(seed, pos + k);
	for (; MP_PATTERN_HOST_IS_LE && k + MP_PATTERN_BLOCK_BYTES <= n; k += MP_PATTERN_BLOCK_BYTES) {
		const uint32_t first = mp_pattern_word(seed, (pos + k) / 4);
		unsigned int i;

		for (i = 0; i < MP_PATTERN_BLOCK_WORDS; i++) {
			const uint32_t w = first + i;

			memcpy(d + k + 4 * i, &w, 4);
		}
	}
	for (; k + 4 <= n; k += 4)
		mp_pattern_le(seed, (pos + k) / 4, d + k);
	for (; k < n; k++)
		d[k] = mp_pattern_byte(seed, pos + k);
}

/* The offset in src of the first of its n bytes (stream offset pos) that differs from the
 * pattern, or -1 if none does. */
static inline int64_t mp_pattern_find_mismatch(const void *src, size_t n, uint64_t pos,
					       uint32_t seed)
{
	const uint8_t *s = (const uint8_t *)src;
	uint8_t le[4];
	size_t k = 0;

	for (; k < n && (pos + k) % 4; k++)
		if (s[k] != mp_pattern_byte(seed, pos + k))
			return (int64_t)k;
	/* whole blocks while they match; the word loop finds the word in the block that differs */
	for (; MP_PATTERN_HOST_IS_LE && k + MP_PATTERN_BLOCK_BYTES <= n; k += MP_PATTERN_BLOCK_BYTES)
		if (mp_pattern_block_diff(s + k, pos + k, seed))
			break;
	for (; k + 4 <= n; k += 4) {
		mp_pattern_le(seed, (pos + k) / 4, le);
		if (memcmp(s + k, le, 4))
			break;		/* the byte loop below finds which */
	}
	for (; k < n; k++)
		if (s[k] != mp_pattern_byte(seed, pos + k))
			return (int64_t)k;
	return -1;
}

/* The number of the n bytes at src (stream offset pos) that differ from the pattern. */
static inline size_t mp_pattern_count_mismatches(const void *src, size_t n, uint64_t pos,
						 uint32_t seed)
{
	const uint8_t *s = (const uint8_t *)src;
	size_t k = 0, j, bad = 0;

	for (; k < n && (pos + k) % 4; k++)
		bad += s[k] != mp_pattern_byte(seed, pos + k);
	/* blocks that match cost a block compare; one that does not is counted byte by byte */
	for (; MP_PATTERN_HOST_IS_LE && k + MP_PATTERN_BLOCK_BYTES <= n; k += MP_PATTERN_BLOCK_BYTES)
		if (mp_pattern_block_diff(s + k, pos + k, seed))
			for (j = k; j < k + MP_PATTERN_BLOCK_BYTES; j++)
				bad += s[j] != mp_pattern_byte(seed, pos + j);
	for (; k < n; k++)
		bad += s[k] != mp_pattern_byte(seed, pos + k);
	return bad;
}

#ifdef __cplusplus
}
#endif

#endif /* MPRACE_PATTERN_H */
