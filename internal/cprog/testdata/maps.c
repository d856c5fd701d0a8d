/* Prints its own /proc/self/maps — read with read(2) into a static buffer,
   written with write(2): nothing that maps memory — then calls marker(),
   where a debugger stopped sees the mappings the program printed. */
#include <fcntl.h>
#include <unistd.h>

static char buf[1 << 16];

__attribute__((noinline)) void marker(void) { __asm__ volatile("" ::: "memory"); }

int main(void) {
	int fd = open("/proc/self/maps", O_RDONLY);
	size_t n = 0;
	ssize_t r;
	while (fd >= 0 && n < sizeof buf && (r = read(fd, buf + n, sizeof buf - n)) > 0)
		n += (size_t)r;
	close(fd);
	if (write(1, buf, n) != (ssize_t)n)
		return 1;
	marker();
	return 0;
}
