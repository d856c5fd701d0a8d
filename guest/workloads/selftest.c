/*
 * selftest: checks the kernel and the user library on paths the other
 * workloads do not take: join values and errors, the 64-thread limit and
 * slot reuse, futex EAGAIN and timeouts, trylock/timedlock, barrier, event,
 * sleep, yield, trace, the allocator and the formatter, and the disk driver
 * (argument checks, a round trip in the last sector, which is restored
 * afterwards, and concurrent requests queued behind each other), and the
 * NIC system calls' argument checks (-EIO without a NIC). One truth
 * line per check (check=NAME ok=0|1), then the result. Checks that need the
 * timer are skipped (ok=skip) with --timer-hz 0, the disk checks when no
 * disk is attached.
 */
#include <reprise/ulib.h>

static int failures, checks;

static void check(const char *name, int ok, const char *detail)
{
	checks++;
	if (!ok)
		failures++;
	if (detail && *detail)
		truth("check=%s ok=%d %s", name, ok, detail);
	else
		truth("check=%s ok=%d", name, ok);
}

static void skip(const char *name)
{
	truth("check=%s ok=skip", name);
}

/* ---- threads */
static long triple(void *arg)
{
	return (long)arg * 3;
}

static struct event go;

static long wait_go(void *arg)
{
	event_wait(&go);
	return (long)arg;
}

static void test_threads(void)
{
	int tid[8], ok = 1;
	for (long i = 0; i < 8; i++)
		tid[i] = thread_create(triple, (void *)i);
	for (long i = 0; i < 8; i++)
		ok &= tid[i] > 1 && thread_join(tid[i]) == i * 3;
	check("join_values", ok, "");

	char d[64];
	long r1 = thread_join(gettid()), r2 = thread_join(12345), r3 = thread_join(tid[0]);
	snprintf(d, sizeof d, "self=%ld bad=%ld twice=%ld", r1, r2, r3);
	check("join_errors", r1 == -REPRISE_EINVAL && r2 == -REPRISE_EINVAL && r3 == -REPRISE_EINVAL, d);

	/* 64 slots: idle, main, so 62 more threads, the 63rd fails */
	static int many[64];
	int n = 0, last;
	while ((last = thread_create(wait_go, (void *)(long)n)) > 0 && n < 64)
		many[n++] = last;
	event_set(&go);
	ok = 1;
	for (int i = 0; i < n; i++)
		ok &= thread_join(many[i]) == i;
	snprintf(d, sizeof d, "created=%d then=%d", n, last);
	check("thread_limit", ok && n == 62 && last == -REPRISE_EAGAIN, d);

	int t = thread_create(triple, (void *)7);
	check("slot_reuse", t > 64 && thread_join(t) == 21, "");

	check("create_bad_fn", sys2(SYS_THREAD_CREATE, 0x1000, 0) == -REPRISE_EINVAL, "");
}

/* ---- futex and mutex */
static struct mutex m = MUTEX_INIT("selftest");
static volatile uint32_t fword;

static long try_timed(void *arg)
{
	return mutex_timedlock(&m, (uint64_t)(long)arg);
}

static void test_sync(void)
{
	char d[80];
	long r = sys_futex_wait(&fword, 1, 0);
	check("futex_eagain", r == -REPRISE_EAGAIN, "");
	r = sys_futex_wait((volatile uint32_t *)2, 0, 0);
	check("futex_einval", r == -REPRISE_EINVAL, "");
	check("futex_wake_none", sys_futex_wake(&fword, 1) == 0, "");

	mutex_lock(&m);
	check("trylock_busy", mutex_trylock(&m) == EBUSY, "");
	if (timer_hz()) {
		/* Timeouts run on the coarse clock (the clock page, updated at
		 * ticks): it must have advanced by the whole timeout. Exact time
		 * is only reported: a late tick under host load makes the coarse
		 * start stale by an unbounded amount. */
		uint64_t c0 = clock_coarse_ns(), t0 = clock_ns();
		r = sys_futex_wait(&fword, 0, 20000000);
		uint64_t dc = clock_coarse_ns() - c0, dt = clock_ns() - t0;
		snprintf(d, sizeof d, "r=%ld coarse_us=%lu elapsed_us=%lu", r,
			 (unsigned long)(dc / 1000), (unsigned long)(dt / 1000));
		check("futex_timeout", r == -REPRISE_ETIMEDOUT && dc >= 20000000, d);

		int t = thread_create(try_timed, (void *)30000000L);
		r = thread_join(t);
		check("timedlock_timeout", r == REPRISE_ETIMEDOUT, "");

		t = thread_create(try_timed, (void *)2000000000L);
		sleep_ms(20);
		mutex_unlock(&m);
		r = thread_join(t);
		check("timedlock_acquire", r == 0 && m.state != 0, "");
		mutex_unlock(&m);
	} else {
		mutex_unlock(&m);
		skip("futex_timeout");
		skip("timedlock_timeout");
		skip("timedlock_acquire");
	}
	snprintf(d, sizeof d, "acquired=%lu contended=%lu", (unsigned long)m.acquired,
		 (unsigned long)m.contended);
	check("mutex_counts", m.acquired == (timer_hz() ? 2u : 1u), d);
}

static struct barrier bar;
static volatile uint32_t phase_count[3];

static long barrier_thread(void *arg)
{
	(void)arg;
	for (int r = 0; r < 3; r++) {
		atomic_add32(&phase_count[r], 1);
		barrier_wait(&bar);
		if (phase_count[r] != 4)
			return 1;
		yield();
	}
	return 0;
}

static void test_barrier(void)
{
	barrier_init(&bar, 4);
	int t[4], ok = 1;
	for (int i = 0; i < 4; i++)
		t[i] = thread_create(barrier_thread, 0);
	for (int i = 0; i < 4; i++)
		ok &= thread_join(t[i]) == 0;
	check("barrier", ok, "");
}

/* ---- time */
static void test_time(void)
{
	char d[80];
	uint64_t c0 = clock_coarse_ns(), t0 = clock_ns();
	check("clock_order", c0 <= t0, "");
	if (!timer_hz()) {
		skip("sleep");
		return;
	}
	uint64_t period = 1000000000ULL / timer_hz();
	uint64_t s0 = clock_coarse_ns();
	sleep_ms(50);
	uint64_t ds = clock_coarse_ns() - s0, dt = clock_ns() - t0;
	snprintf(d, sizeof d, "coarse_us=%lu elapsed_us=%lu tick_us=%lu", (unsigned long)(ds / 1000),
		 (unsigned long)(dt / 1000), (unsigned long)(period / 1000));
	/* on the coarse clock the sleep lasted at least 50 ms; no upper bound: host noise */
	check("sleep", ds >= 50000000, d);
	check("clock_coarse_moves", clock_coarse_ns() > c0, "");
}

/* ---- misc */
static void test_misc(void)
{
	char b[96];
	snprintf(b, sizeof b, "%d|%5u|%-4x|%08lx|%s|%c|%p|%%|%ld", -42, 7u, 0xabu,
		 0x1234UL, "str", 'z', (void *)0x10, -1L);
	check("format", !strcmp(b, "-42|    7|ab  |00001234|str|z|0x10|%|-1"), "");
	check("fnv", fnv1a64("a", 1) == 0xaf63dc4c8601ec8cULL, "");
	void *p = ualloc(100), *q = ualloc(1);
	check("ualloc", p && q && (uint64_t)q - (uint64_t)p == 112 && ((uint64_t)p & 15) == 0, "");
	check("trace", sys_trace(7, 1, 2) == 0, "");
	check("yield", sys_yield() == 0, "");
	check("bench_nop", sys_bench(REPRISE_BENCH_NOP, 0) == 0, "");
	check("bench_bad", sys_bench(99, 0) == -REPRISE_EINVAL, "");
	check("write_bad", sys_write((void *)0x1000, 4) == -REPRISE_EINVAL, "");
}

/* ---- disk (only when one is attached) */
#define DQ_THREADS 4
#define DQ_ROUNDS 3
static uint8_t *dq_buf[DQ_THREADS][DQ_ROUNDS];
static uint64_t dq_cap;
static uint32_t dq_n;   /* sectors per request: big ones, so they overlap */
static struct barrier dq_bar;

static uint64_t dq_sector(long i, int r)
{
	return ((uint64_t)(i * DQ_ROUNDS + r) * dq_n) % (dq_cap - dq_n + 1);
}

/* All start together (barrier), so their requests pile up in the kernel */
static long disk_reader(void *arg)
{
	long i = (long)arg, err = 0;
	barrier_wait(&dq_bar);
	for (int r = 0; r < DQ_ROUNDS; r++)
		err |= sys_disk_read(dq_sector(i, r), dq_n, dq_buf[i][r]);
	return err;
}

static void test_disk(void)
{
	static const char *names[] = { "disk_bad_count", "disk_bad_range", "disk_bad_buf",
				       "disk_roundtrip", "disk_queue" };
	char d[96];
	uint64_t cap = sys_disk_sectors();
	if (!cap) {
		for (size_t i = 0; i < ARRAY_SIZE(names); i++)
			skip(names[i]);
		return;
	}
	static uint8_t sect[3][REPRISE_DISK_SECTOR];
	uint8_t *b = sect[0], *orig = sect[1], *back = sect[2];
	long r0 = sys_disk_read(0, 0, b), r1 = sys_disk_read(0, REPRISE_DISK_MAX_SECTORS + 1, b);
	long r2 = sys3(SYS_DISK_WRITE, 0, -1L, (long)b);
	snprintf(d, sizeof d, "zero=%ld over=%ld huge=%ld", r0, r1, r2);
	check(names[0], r0 == -REPRISE_EINVAL && r1 == -REPRISE_EINVAL && r2 == -REPRISE_EINVAL, d);

	r0 = sys_disk_read(cap, 1, b);
	r1 = sys_disk_read(cap - 1, 2, b);
	r2 = sys_disk_write(~0ULL, 2, b);
	snprintf(d, sizeof d, "at_end=%ld across=%ld wrap=%ld", r0, r1, r2);
	check(names[1], r0 == -REPRISE_EINVAL && r1 == -REPRISE_EINVAL && r2 == -REPRISE_EINVAL, d);

	r0 = sys_disk_read(0, 1, (void *)0x1000);          /* kernel memory */
	r1 = sys_disk_write(0, 1, (void *)(reprise_uboot.mem_bytes - 256)); /* past RAM */
	snprintf(d, sizeof d, "kernel=%ld past_ram=%ld", r0, r1);
	check(names[2], r0 == -REPRISE_EINVAL && r1 == -REPRISE_EINVAL, d);

	/* last sector: save, write a pattern, read back, restore */
	uint64_t last = cap - 1;
	int ok = 1;
	long rs = sys_disk_read(last, 1, orig);
	for (int i = 0; i < REPRISE_DISK_SECTOR; i++)
		b[i] = (uint8_t)(i * 7 + 0x5a) ^ orig[i];   /* differs from what is there */
	long rw = sys_disk_write(last, 1, b);
	memset(back, 0, REPRISE_DISK_SECTOR);
	long rr = sys_disk_read(last, 1, back);
	ok = rs == 0 && rw == 0 && rr == 0 && !memcmp(b, back, REPRISE_DISK_SECTOR);
	long rx = sys_disk_write(last, 1, orig);
	long ry = sys_disk_read(last, 1, back);
	ok &= rx == 0 && ry == 0 && !memcmp(orig, back, REPRISE_DISK_SECTOR);
	snprintf(d, sizeof d, "capacity=%lu sector=%lu save=%ld write=%ld read=%ld restore=%ld,%ld",
		 (unsigned long)cap, (unsigned long)last, rs, rw, rr, rx, ry);
	check(names[3], ok, d);

	/* DQ_THREADS threads read at once (queued FIFO behind each other in
	 * the kernel); each must see what a lone read sees */
	dq_cap = cap;
	dq_n = cap < REPRISE_DISK_MAX_SECTORS ? (uint32_t)cap : REPRISE_DISK_MAX_SECTORS;
	size_t bytes = (size_t)dq_n * REPRISE_DISK_SECTOR;
	barrier_init(&dq_bar, DQ_THREADS);
	int tid[DQ_THREADS];
	uint8_t *ref = ualloc(bytes);
	ok = ref != 0;
	for (long i = 0; i < DQ_THREADS; i++)
		for (int r = 0; r < DQ_ROUNDS; r++)
			ok &= (dq_buf[i][r] = ualloc(bytes)) != 0;
	if (!ok) {
		truth("check=%s ok=skip no-memory", names[4]);
		return;
	}
	for (long i = 0; i < DQ_THREADS; i++)
		tid[i] = thread_create(disk_reader, (void *)i);
	ok = 1;
	for (long i = 0; i < DQ_THREADS; i++) {
		ok &= thread_join(tid[i]) == 0;
		for (int r = 0; r < DQ_ROUNDS; r++)
			ok &= sys_disk_read(dq_sector(i, r), dq_n, ref) == 0 &&
			      !memcmp(ref, dq_buf[i][r], bytes);
	}
	snprintf(d, sizeof d, "threads=%d rounds=%d sectors=%u", DQ_THREADS, DQ_ROUNDS, dq_n);
	check(names[4], ok, d);
}

/* ---- NIC system calls' argument checks (never sets the rings up).
 * Without a NIC every one is -EIO; with one, rings outside user memory are
 * -EINVAL and a wait with a count that cannot be current returns at once. */
static void test_net(void)
{
	char d[96];
	static struct reprise_nic_desc ring[REPRISE_NIC_RING];
	long s = sys_net_setup((void *)0x1000, ring);
	if (s == -REPRISE_EIO) {
		long w = sys_net_wait(0), rt = sys_net_rxtail(0), tt = sys_net_txtail(0);
		snprintf(d, sizeof d, "nic=0 setup=%ld wait=%ld rxtail=%ld txtail=%ld", s, w, rt, tt);
		check("net_args", w == -REPRISE_EIO && rt == -REPRISE_EIO && tt == -REPRISE_EIO, d);
		return;
	}
	long s2 = sys_net_setup(ring, (void *)(reprise_uboot.mem_bytes - 512));   /* past RAM */
	long w = sys_net_wait(~0ULL);
	snprintf(d, sizeof d, "nic=1 kernel_rx=%ld tx_past_ram=%ld wait=%ld", s, s2, w);
	check("net_args", s == -REPRISE_EINVAL && s2 == -REPRISE_EINVAL && w >= 0, d);
}

int wl_selftest(const struct args *a)
{
	(void)a;
	test_threads();
	test_sync();
	test_barrier();
	test_time();
	test_misc();
	test_disk();
	test_net();
	if (failures) {
		truth("result=FAIL checks=%d failures=%d", checks, failures);
		return 1;
	}
	truth("result=ok checks=%d", checks);
	return 0;
}
