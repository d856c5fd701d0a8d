#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Tries to make the kernel hold more host memory than a program is
   allowed, one way per argument; each way stops at the first error and
   prints it with what it reached. The parent's exit status is 0 when the
   way ended at a limit with an error Linux gives there. */

static char chunk[1 << 20];

/* report is what a child tells its parent, in one write: children
   write at once, and a pipe keeps writes of up to PIPE_BUF whole. */
struct report {
	long n, made;
	int err;
};

static void tell(int fd, long n, long made, int err) {
	struct report r = {n, made, err};
	write(fd, &r, sizeof r);
}
static pid_t kids[8192];

/* reap kills and waits for the first n children. */
static void reap(int n) {
	for (int i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	for (int i = 0; i < n; i++)
		waitpid(kids[i], NULL, 0);
}

/* writes fills fd with size bytes, 1 MiB at a time; it returns 0 or the
   errno of a failed write. */
static int writes(int fd, long size, long *done) {
	for (long n = 0; n < size;) {
		long w = write(fd, chunk, size - n < (long)sizeof chunk ? size - n : (long)sizeof chunk);
		if (w < 0)
			return errno;
		n += w;
		*done += w;
	}
	return 0;
}

static int ended(const char *what, long reached, int err, int want1, int want2) {
	printf("%s: %ld, then %s\n", what, reached, strerror(err));
	return err == want1 || err == want2 ? 0 : 1;
}

/* trunc rewrites a file of mb MiB rounds times with O_TRUNC, mapping a
   page of each generation and keeping the mappings: as on Linux, the
   truncated contents are gone, and it never runs out. */
static int trunc_mapped(long mb, int rounds) {
	long done = 0;
	for (int i = 0; i < rounds; i++) {
		int fd = open("/tmp/f", O_CREAT | O_TRUNC | O_RDWR, 0644);
		int err = fd < 0 ? errno : writes(fd, mb << 20, &done);
		if (err)
			return ended("trunc rounds", i, err, 0, 0) + 1;
		if (mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED)
			return ended("trunc rounds", i, errno, 0, 0) + 1;
		close(fd);
	}
	printf("trunc rounds: %d\n", rounds);
	return 0;
}

/* trunc_unmapped does the same but unmaps each generation first: it must
   never run out. */
static int trunc_unmapped(long mb, int rounds) {
	long done = 0;
	void *m = NULL;
	for (int i = 0; i < rounds; i++) {
		if (m)
			munmap(m, 4096);
		int fd = open("/tmp/f", O_CREAT | O_TRUNC | O_RDWR, 0644);
		int err = fd < 0 ? errno : writes(fd, mb << 20, &done);
		if (err)
			return ended("rewrite rounds", i, err, 0, 0) + 1;
		m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED)
			return ended("rewrite rounds", i, errno, 0, 0) + 1;
		close(fd);
	}
	printf("rewrite rounds: %d\n", rounds);
	return 0;
}

/* files writes 64 MiB files until the file system is full. */
static int files(void) {
	long done = 0;
	for (int i = 0;; i++) {
		char name[32];
		snprintf(name, sizeof name, "/tmp/f%d", i);
		int fd = open(name, O_CREAT | O_WRONLY, 0644);
		if (fd < 0)
			return ended("file bytes", done, errno, ENOSPC, ENOSPC);
		int err = writes(fd, 64 << 20, &done);
		if (err)
			return ended("file bytes", done, err, ENOSPC, ENOSPC);
		close(fd);
	}
}

/* removed writes and removes 64 MiB temporary files, 32 of them: a
   removed file's space comes back. Then a removed file still open keeps
   its space until it is closed. */
static int removed(void) {
	long done = 0;
	for (int i = 0; i < 32; i++) {
		int fd = open("/tmp/t", O_CREAT | O_EXCL | O_RDWR, 0600);
		int err = fd < 0 ? errno : writes(fd, 64 << 20, &done);
		if (err)
			return ended("temporary files", i, err, 0, 0) + 1;
		unlink("/tmp/t");
		close(fd);
	}
	int big = open("/tmp/big", O_CREAT | O_RDWR, 0600);
	int err = writes(big, 768 << 20, &done);
	unlink("/tmp/big");
	int more = open("/tmp/more", O_CREAT | O_RDWR, 0600);
	int open_err = writes(more, 512 << 20, &done);
	close(big);
	ftruncate(more, 0);
	lseek(more, 0, SEEK_SET);
	int closed_err = writes(more, 512 << 20, &done);
	printf("temporary files: 32; removed, open: %s; closed: %s\n", strerror(open_err), strerror(closed_err));
	return err || open_err != ENOSPC || closed_err;
}

/* sparse grows one file by writing a byte past its end, 64 MiB further
   each time, until the file system is full. */
static int sparse(void) {
	int fd = open("/tmp/sparse", O_CREAT | O_WRONLY, 0644);
	long size = 0;
	for (;;) {
		if (pwrite(fd, "x", 1, size + (64 << 20) - 1) < 0)
			return ended("sparse bytes", size, errno, ENOSPC, EFBIG);
		size += 64 << 20;
	}
}

/* pipes fills pipes in children until something fails; each child
   reports through its exit status. */
static int pipes(int procs) {
	memset(chunk, 'p', sizeof chunk);
	int report[2];
	if (pipe(report) < 0)
		return ended("pipes", 0, errno, 0, 0) + 1;
	for (int i = 0; i < procs; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return ended("pipe children", i, errno, EAGAIN, EAGAIN);
		if (pid > 0) {
			kids[i] = pid;
			continue;
		}
		long bytes = 0;
		for (long made = 0;; made++) {
			int p[2];
			if (pipe2(p, O_NONBLOCK) < 0) {
				tell(report[1], bytes, made, errno);
				pause();
			}
			long w = write(p[1], chunk, 65536);
			if (w < 0) {
				tell(report[1], bytes, made, errno);
				pause();
			}
			bytes += w;
		}
	}
	long total = 0, made = 0;
	int bad = 0, last = 0;
	for (int i = 0; i < procs; i++) {
		struct report r;
		if (read(report[0], &r, sizeof r) != sizeof r)
			return ended("pipe reports", i, errno, 0, 0) + 1;
		total += r.n;
		made += r.made;
		last = r.err;
		bad += r.err != EMFILE && r.err != ENFILE;
	}
	printf("pipes: %ld holding %ld bytes, last error %s, %d unexpected\n", made, total, strerror(last), bad);
	reap(procs);
	return bad != 0;
}

/* dirs makes directories side by side, then chains, until it fails. */
static int dirs(void) {
	char name[64], base[] = "/tmp/dirsXXXXXX";
	long i;
	if (!mkdtemp(base))
		return 1;
	for (i = 0;; i++) {
		snprintf(name, sizeof name, "%s/d%ld", base, i);
		if (mkdir(name, 0755) < 0)
			break;
	}
	int err = errno;
	printf("dirs: %ld, then %s\n", i, strerror(err));
	if (err != ENOSPC)
		return 1;
	/* Room again, for a chain: each a level deeper, by chdir-free
	   relative names under an open directory. */
	for (long j = 0; j < i; j++) {
		snprintf(name, sizeof name, "%s/d%ld", base, j);
		unlinkat(AT_FDCWD, name, AT_REMOVEDIR);
	}
	int fd = open(base, O_RDONLY | O_DIRECTORY);
	long depth;
	for (depth = 0;; depth++) {
		if (mkdirat(fd, "d", 0755) < 0)
			break;
		int next = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		if (next < 0)
			break;
		close(fd);
		fd = next;
	}
	return ended("depth", depth, errno, ENAMETOOLONG, ENAMETOOLONG);
}

/* zombies makes orphans: children that fork a grandchild and exit at
   once. Orphans are reparented to the first process, as to init, so its
   waits reap them too: two processes a round. */
static int zombies(int rounds) {
	long made = 0, reaped = 0;
	for (int i = 0; i < rounds; i++) {
		pid_t c = fork();
		if (c < 0)
			return ended("orphans", made, errno, 0, 0) + 1;
		if (c == 0) {
			if (fork() == 0)
				_exit(0);
			_exit(0);
		}
		made++;
		while (waitpid(-1, NULL, 0) > 0)
			reaped++;
	}
	printf("orphans: %ld, reaped %ld\n", made, reaped);
	return reaped == 2 * made ? 0 : 1;
}

/* subreaper: a child that is a subreaper adopts the orphans of its
   descendants, so its waits reap them, not the first process's. */
static int subreaper(int rounds) {
	pid_t c = fork();
	if (c == 0) {
		if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
			_exit(100);
		int reaped = 0;
		for (int i = 0; i < rounds; i++) {
			if (fork() == 0) {
				if (fork() == 0)
					_exit(0);
				_exit(0);
			}
			while (waitpid(-1, NULL, 0) > 0)
				reaped++;
		}
		_exit(reaped == 2 * rounds ? 0 : 101);
	}
	int st, n = 0;
	while (waitpid(-1, &st, 0) > 0)
		n++;
	printf("subreaper: exit %d, the first process reaped %d\n", WEXITSTATUS(st), n);
	return WEXITSTATUS(st) != 0 || n != 1;
}

/* ignored forks children that exit at once with SIGCHLD ignored: Linux
   reaps them as they exit, so they never fill the process table, and a
   wait finds none. */
static int ignored(int n) {
	signal(SIGCHLD, SIG_IGN);
	for (int i = 0; i < n; i++) {
		pid_t c = fork();
		if (c < 0)
			return ended("ignored children", i, errno, 0, 0) + 1;
		if (c == 0)
			_exit(0);
	}
	while (wait(NULL) > 0)
		;
	return ended("ignored children", n, errno, ECHILD, ECHILD);
}

/* descriptors opens files in children until each runs out of
   descriptors: the most every process can hold at once. */
static int descriptors(int procs) {
	int fd = open("/tmp/x", O_CREAT | O_WRONLY, 0644);
	close(fd);
	int report[2];
	if (pipe(report) < 0)
		return ended("descriptors", 0, errno, 0, 0) + 1;
	for (int i = 0; i < procs; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return ended("descriptor children", i, errno, 0, 0) + 1;
		if (pid > 0) {
			kids[i] = pid;
			continue;
		}
		long n = 0;
		while (open("/tmp/x", O_RDONLY) >= 0)
			n++;
		tell(report[1], n, 0, errno);
		pause();
	}
	long total = 0;
	int bad = 0;
	for (int i = 0; i < procs; i++) {
		struct report r;
		if (read(report[0], &r, sizeof r) != sizeof r)
			return ended("descriptor reports", i, errno, 0, 0) + 1;
		total += r.n;
		bad += r.err != EMFILE;
	}
	printf("descriptors: %ld, %d unexpected\n", total, bad);
	reap(procs);
	return bad != 0;
}

/* forks forks children that pause until fork fails. */
static int forks(void) {
	long n;
	for (n = 0; n < (long)(sizeof kids / sizeof kids[0]); n++) {
		pid_t c = fork();
		if (c < 0)
			break;
		if (c == 0) {
			pause();
			_exit(0);
		}
		kids[n] = c;
	}
	int err = errno;
	struct rlimit rl;
	getrlimit(RLIMIT_NPROC, &rl);
	printf("children: %ld, then %s; RLIMIT_NPROC %ld\n", n, strerror(err), (long)rl.rlim_cur);
	reap(n);
	return err == EAGAIN ? 0 : 1;
}

int main(int argc, char **argv) {
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc < 2)
		return 2;
	const char *w = argv[1];
	if (!strcmp(w, "trunc"))
		return trunc_mapped(argc > 2 ? atol(argv[2]) : 64, argc > 3 ? atoi(argv[3]) : 32);
	if (!strcmp(w, "rewrite"))
		return trunc_unmapped(argc > 2 ? atol(argv[2]) : 64, argc > 3 ? atoi(argv[3]) : 64);
	if (!strcmp(w, "files"))
		return files();
	if (!strcmp(w, "removed"))
		return removed();
	if (!strcmp(w, "sparse"))
		return sparse();
	if (!strcmp(w, "pipes"))
		return pipes(argc > 2 ? atoi(argv[2]) : 255);
	if (!strcmp(w, "dirs"))
		return dirs();
	if (!strcmp(w, "zombies"))
		return zombies(argc > 2 ? atoi(argv[2]) : 5000);
	if (!strcmp(w, "subreaper"))
		return subreaper(argc > 2 ? atoi(argv[2]) : 100);
	if (!strcmp(w, "ignored"))
		return ignored(argc > 2 ? atoi(argv[2]) : 1000);
	if (!strcmp(w, "descriptors"))
		return descriptors(argc > 2 ? atoi(argv[2]) : 255);
	if (!strcmp(w, "forks"))
		return forks();
	return 2;
}
