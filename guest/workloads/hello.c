/* hello: smoke test. */
#include <reprise/ulib.h>

int wl_hello(const struct args *a)
{
	(void)a;
	uint64_t r = 0;
	printf("hello from the reprise guest kit (tid %d, timer %u Hz, %lu MiB)\n",
	       gettid(), timer_hz(), (unsigned long)(reprise_uboot.mem_bytes >> 20));
	/* entropy: different in every run, identical in every replay */
	if (sys_getrandom(&r, sizeof r) != sizeof r) {
		truth("result=FAIL getrandom");
		return 1;
	}
	truth("random=0x%016lx", (unsigned long)r);
	truth("result=ok");
	return 0;
}
