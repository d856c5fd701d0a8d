/*
 * periodic: a periodic critical task for preemption studies. One thread is
 * released every P ms (absolute release times start + k*P), sleeps until
 * its release, does a fixed amount of work, and records
 *   wake latency  = first instruction after the sleep - release time,
 *   latency       = work done - release time,
 * both from SYS_CLOCK_NS, beside N CPU-bound background threads that the
 * round-robin scheduler runs in between. A release that is already past
 * when the task finishes is skipped and counted as missed. With iters=1
 * each iteration's times are printed too (truth: iter=K woke_ns= done_ns=),
 * on the recording's clock, for tools that explain one slow iteration.
 */
#include <reprise/ulib.h>

#define MAXBG 32

static volatile uint32_t stop;
static uint64_t work_iters;
static uint64_t bg_units[MAXBG];

static NOINLINE uint64_t work(uint64_t x, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ULL + 1;
		x ^= x >> 27;
	}
	return x;
}

static long background(void *arg)
{
	long id = (long)arg;
	uint64_t x = (uint64_t)id, n = 0;
	int coop = timer_hz() == 0;      /* no preemption without a timer */
	while (!stop) {
		x = work(x, 1000);
		n++;
		if (coop)
			yield();
	}
	bg_units[id] = n;
	return (long)(x & 1);
}

struct stats {
	uint64_t min, max, sum;
};

static void stat_add(struct stats *s, uint64_t v)
{
	if (v < s->min)
		s->min = v;
	if (v > s->max)
		s->max = v;
	s->sum += v;
}

int wl_periodic(const struct args *a)
{
	uint64_t period = arg_u64(a, "period_ms", 10) * 1000000ULL;
	uint64_t count = arg_u64(a, "count", 60);
	uint64_t nbg = arg_u64(a, "bg", 2);
	work_iters = arg_u64(a, "work", 200000);
	int show_iters = arg_u64(a, "iters", 0) != 0;
	if (nbg > MAXBG || count == 0 || period == 0) {
		printf("periodic: need bg <= %d, count > 0, period_ms > 0\n", MAXBG);
		return 2;
	}
	int tids[MAXBG];
	for (uint64_t i = 0; i < nbg; i++)
		tids[i] = thread_create(background, (void *)i);

	struct stats lat = { ~0ULL, 0, 0 }, wake = { ~0ULL, 0, 0 };
	uint64_t missed = 0, x = 1, done;
	uint64_t next = clock_ns() + period;
	for (uint64_t k = 0; k < count; k++) {
		/* sleep on the coarse clock: the kernel wakes us at the first
		 * tick whose clock is >= next, never before the release */
		uint64_t c = clock_coarse_ns();
		if (c < next)
			sleep_ns(next - c);
		uint64_t woke = clock_ns();
		while (woke < next) {           /* no timer: sleep only yields */
			yield();
			woke = clock_ns();
		}
		x = work(x, work_iters);
		done = clock_ns();
		stat_add(&wake, woke - next);
		stat_add(&lat, done - next);
		if (show_iters)
			truth("iter=%lu release_ns=%lu woke_ns=%lu done_ns=%lu", (unsigned long)k,
			      (unsigned long)next, (unsigned long)woke, (unsigned long)done);
		next += period;
		while (next <= done) {
			next += period;
			missed++;
		}
	}
	stop = 1;
	uint64_t bgsum = 0;
	for (uint64_t i = 0; i < nbg; i++) {
		thread_join(tids[i]);
		bgsum += bg_units[i];
	}
	truth("period_ms=%lu count=%lu missed=%lu bg=%lu work=%lu tid=%d",
	      (unsigned long)(period / 1000000), (unsigned long)count, (unsigned long)missed,
	      (unsigned long)nbg, (unsigned long)work_iters, gettid());
	truth("lat_min_us=%lu lat_avg_us=%lu lat_max_us=%lu",
	      (unsigned long)(lat.min / 1000), (unsigned long)(lat.sum / count / 1000),
	      (unsigned long)(lat.max / 1000));
	truth("wake_min_us=%lu wake_avg_us=%lu wake_max_us=%lu",
	      (unsigned long)(wake.min / 1000), (unsigned long)(wake.sum / count / 1000),
	      (unsigned long)(wake.max / 1000));
	truth("bg_units=%lu checksum=0x%lx", (unsigned long)bgsum, (unsigned long)x);
	truth("result=ok");
	return 0;
}
