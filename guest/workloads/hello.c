/* hello: smoke test. */
#include <reprise/ulib.h>

int wl_hello(const struct args *a)
{
	(void)a;
	printf("hello from the reprise guest kit (tid %d, timer %u Hz, %lu MiB)\n",
	       gettid(), timer_hz(), (unsigned long)(reprise_uboot.mem_bytes >> 20));
	truth("result=ok");
	return 0;
}
