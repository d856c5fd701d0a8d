/*
 * disk: a dd-like reader/writer for the paravirtual disk (SYS_DISK_*).
 *
 *   disk mode=read  [start=S] [count=N] [chunk=C]
 *       reads sectors [S, S+N) (default S=0, N = capacity - S), C sectors
 *       per request (default 64, at most REPRISE_DISK_MAX_SECTORS = 256);
 *       truth: mode=read start=S sectors=N sha=0x<16 hex digits>
 *   disk mode=write [start=S] [count=N] [seed=X] [chunk=C]
 *       writes the pattern below over [S, S+N) (same defaults; seed default
 *       0x5eed), then reads the range back and compares;
 *       truth: mode=write start=S sectors=N seed=X sha=0x<...> verified=1
 *   disk [mode=rw] [count=N] [seed=X] [chunk=C]
 *       (the default) the write above on N sectors (default min(256,
 *       capacity)) in the middle of the disk, start = (capacity - N) / 2,
 *       then a read of the whole disk: both truth lines (write, then read).
 *
 * Always first `truth: capacity=<sectors>` and last `truth: result=ok`
 * (exit 0), or `truth: result=FAIL <why>` (exit 1) on a bad argument, a
 * failed request (err=-5: -REPRISE_EIO, err=-22: -REPRISE_EINVAL) or a
 * mismatch; with no disk attached: `truth: capacity=0`,
 * `truth: result=FAIL no-disk`, exit 3. seed= is printed in decimal.
 *
 * ---- for the host side of a test (mirror these exactly) ----
 *
 * sha: FNV-1a 64 (include/reprise/fnv.h: h = 0xcbf29ce484222325; for each
 * byte b in order: h ^= b; h *= 0x100000001b3, mod 2^64) over all the bytes
 * of the range, from byte S*512 to byte (S+N)*512 - 1 of the disk, in order,
 * printed as 0x + 16 lowercase hex digits. mode=read over a raw image file:
 * FNV-1a 64 of file[S*512 : (S+N)*512]. mode=write: the same over the
 * pattern bytes (equal to the bytes read back when verified=1).
 *
 * pattern: the disk is a sequence of little-endian 64-bit words; word w
 * covers the absolute disk bytes [8w, 8w+8), i.e. byte o of the disk is
 * (disk_pattern_word(seed, o / 8) >> (8 * (o % 8))) & 0xff, where (all
 * arithmetic mod 2^64)
 *
 *     x = (seed ^ (w * 0x9E3779B97F4A7C15)) * 6364136223846793005
 *         + 1442695040888963407
 *     disk_pattern_word(seed, w) = x ^ (x >> 32)
 *
 * so any range can be recomputed without the rest. In Go:
 *
 *     func word(seed, w uint64) uint64 {
 *         x := (seed^(w*0x9E3779B97F4A7C15))*6364136223846793005 + 1442695040888963407
 *         return x ^ (x >> 32)
 *     }
 *     // bytes of sectors [s, s+n): for w := s*64; w < (s+n)*64; w++ {
 *     //     binary.LittleEndian.PutUint64(b[8*(w-s*64):], word(seed, w)) }
 *
 * Expected shas for mode=rw on a base image: write line = FNV of the
 * pattern over the middle range; read line = FNV of the base image with
 * that range replaced by the pattern.
 */
#include <reprise/ulib.h>

#define SECTOR REPRISE_DISK_SECTOR
#define WORDS_PER_SECTOR (SECTOR / 8)

uint64_t disk_pattern_word(uint64_t seed, uint64_t w);

NOINLINE uint64_t disk_pattern_word(uint64_t seed, uint64_t w)
{
	uint64_t x = (seed ^ (w * 0x9E3779B97F4A7C15ULL)) * 6364136223846793005ULL +
		     1442695040888963407ULL;
	return x ^ (x >> 32);
}

/* The pattern of sectors [sector, sector + n) into buf. */
static void pattern_fill(uint64_t *buf, uint64_t seed, uint64_t sector, uint32_t n)
{
	uint64_t w0 = sector * WORDS_PER_SECTOR;
	for (uint64_t i = 0; i < (uint64_t)n * WORDS_PER_SECTOR; i++)
		buf[i] = disk_pattern_word(seed, w0 + i);
}

static uint64_t *buf_a, *buf_b;   /* REPRISE_DISK_MAX_SECTORS sectors each */

static int fail_io(const char *what, uint64_t sector, uint32_t n, long err)
{
	truth("result=FAIL %s sector=%lu count=%u err=%ld", what, (unsigned long)sector, n, err);
	return 1;
}

/* Read [start, start+count) in chunks; *sha = FNV-1a 64 of the bytes. */
static int do_read(uint64_t start, uint64_t count, uint32_t chunk, uint64_t *sha)
{
	uint64_t h = FNV1A64_INIT;
	for (uint64_t s = start; s < start + count; s += chunk) {
		uint32_t n = start + count - s < chunk ? (uint32_t)(start + count - s) : chunk;
		long r = sys_disk_read(s, n, buf_a);
		if (r)
			return fail_io("read", s, n, r);
		h = fnv1a64_update(h, buf_a, (size_t)n * SECTOR);
	}
	*sha = h;
	return 0;
}

/* Write the pattern over [start, start+count), then read it back and
 * compare; *sha = FNV-1a 64 of the pattern bytes. */
static int do_write(uint64_t start, uint64_t count, uint32_t chunk, uint64_t seed, uint64_t *sha)
{
	uint64_t h = FNV1A64_INIT;
	for (uint64_t s = start; s < start + count; s += chunk) {
		uint32_t n = start + count - s < chunk ? (uint32_t)(start + count - s) : chunk;
		pattern_fill(buf_a, seed, s, n);
		long r = sys_disk_write(s, n, buf_a);
		if (r)
			return fail_io("write", s, n, r);
		h = fnv1a64_update(h, buf_a, (size_t)n * SECTOR);
	}
	for (uint64_t s = start; s < start + count; s += chunk) {
		uint32_t n = start + count - s < chunk ? (uint32_t)(start + count - s) : chunk;
		long r = sys_disk_read(s, n, buf_b);
		if (r)
			return fail_io("readback", s, n, r);
		pattern_fill(buf_a, seed, s, n);
		if (memcmp(buf_a, buf_b, (size_t)n * SECTOR)) {
			uint32_t i = 0;
			while (((uint8_t *)buf_a)[i] == ((uint8_t *)buf_b)[i])
				i++;
			truth("result=FAIL mismatch byte=%lu want=0x%02x got=0x%02x",
			      (unsigned long)(s * SECTOR + i), ((uint8_t *)buf_a)[i],
			      ((uint8_t *)buf_b)[i]);
			return 1;
		}
	}
	*sha = h;
	return 0;
}

int wl_disk(const struct args *a)
{
	uint64_t cap = sys_disk_sectors();
	truth("capacity=%lu", (unsigned long)cap);
	if (!cap) {
		truth("result=FAIL no-disk");
		return 3;
	}
	const char *mode = arg_str(a, "mode", "rw");
	int rw = !strcmp(mode, "rw");
	if (!rw && strcmp(mode, "read") && strcmp(mode, "write")) {
		truth("result=FAIL bad-args mode=%s (read|write|rw)", mode);
		return 1;
	}
	uint64_t chunk = arg_u64(a, "chunk", 64), seed = arg_u64(a, "seed", 0x5eed);
	uint64_t start, count;
	if (rw) {
		count = arg_u64(a, "count", cap < 256 ? cap : 256);
		start = count <= cap ? (cap - count) / 2 : 0;
	} else {
		start = arg_u64(a, "start", 0);
		count = arg_u64(a, "count", start < cap ? cap - start : 0);
	}
	if (chunk < 1 || chunk > REPRISE_DISK_MAX_SECTORS || count < 1 || start >= cap ||
	    count > cap - start) {
		truth("result=FAIL bad-args start=%lu count=%lu chunk=%lu capacity=%lu",
		      (unsigned long)start, (unsigned long)count, (unsigned long)chunk,
		      (unsigned long)cap);
		return 1;
	}
	buf_a = ualloc(REPRISE_DISK_MAX_SECTORS * SECTOR);
	buf_b = ualloc(REPRISE_DISK_MAX_SECTORS * SECTOR);
	if (!buf_a || !buf_b) {
		truth("result=FAIL no-memory");
		return 1;
	}

	uint64_t sha;
	if (rw || !strcmp(mode, "write")) {
		if (do_write(start, count, (uint32_t)chunk, seed, &sha))
			return 1;
		truth("mode=write start=%lu sectors=%lu seed=%lu sha=0x%016lx verified=1",
		      (unsigned long)start, (unsigned long)count, (unsigned long)seed,
		      (unsigned long)sha);
	}
	if (rw) {
		start = 0;
		count = cap;
	}
	if (rw || !strcmp(mode, "read")) {
		if (do_read(start, count, (uint32_t)chunk, &sha))
			return 1;
		truth("mode=read start=%lu sectors=%lu sha=0x%016lx", (unsigned long)start,
		      (unsigned long)count, (unsigned long)sha);
	}
	truth("result=ok");
	return 0;
}
