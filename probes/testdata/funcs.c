/* Compiled -O2 into the probes tests' image (see image_test.go). */
int counter;

__attribute__((noinline)) int read_global(void) { return counter; }

__attribute__((noinline)) int helper(int x) { return x * 3 + counter; }

__attribute__((noinline)) int pick(int x) { return x > 3 ? helper(x) + 1 : 7; }

__attribute__((noinline)) long sum(const long *p, long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += p[i];
	return s;
}

static __attribute__((noinline, used)) int twin(int x) { return x + 1; }

void _start(void)
{
	counter = pick(read_global()) + (int)sum(0, 0) + twin(2);
	for (;;)
		;
}
