/* FNV-1a 64-bit: the kit's checksum (workload ground truths). Header-only,
 * no dependency: used by guest code and by host tools alike. */
#ifndef REPRISE_FNV_H
#define REPRISE_FNV_H
#include <stdint.h>
#include <stddef.h>

#define FNV1A64_INIT  0xcbf29ce484222325ULL
#define FNV1A64_PRIME 0x100000001b3ULL

static inline uint64_t fnv1a64_update(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = (const unsigned char *)p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= FNV1A64_PRIME;
	}
	return h;
}

static inline uint64_t fnv1a64(const void *p, size_t n)
{
	return fnv1a64_update(FNV1A64_INIT, p, n);
}
#endif
