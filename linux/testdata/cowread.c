#include <stdio.h>
#include <unistd.h>
#include <string.h>
#include <sys/wait.h>
static char buf[3][4096] __attribute__((aligned(4096)));
/* 9 MiB of writable pages, mapped at exec: past what reprise copies at a
   fork (personality 12 copies a smaller process's writable pages at
   once), so the fork shares them copy-on-write, which this tests. */
char ballast[9 << 20];
int main(void) {
	int p[2], bad = 0;
	for (int round = 0; round < 50; round++) {
		pipe(p);
		memset(buf[1], 'a', 4096);
		pid_t c = fork();
		if (c == 0) { char x; read(p[0], &x, 1); _exit(0); } /* child holds the frames */
		volatile char sum = 0;
		for (int i = 0; i < 4096; i += 64) sum += buf[1][i]; /* parent reads: a read-only translation */
		char msg[16]; snprintf(msg, sizeof msg, "round %d", round);
		write(p[1], msg, strlen(msg) + 1);
		int q[2]; pipe(q); write(q[1], "hello world", 12);
		read(q[0], buf[1], 12); /* the VMM writes the copy-on-write page */
		if (strcmp(buf[1], "hello world") != 0) bad++;
		write(p[1], "x", 1);
		waitpid(c, 0, 0);
		close(p[0]); close(p[1]); close(q[0]); close(q[1]);
	}
	printf("stale reads: %d\n", bad);
	return bad != 0;
}
