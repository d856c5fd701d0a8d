/* Alternate signal stacks as Linux keeps them: sigaltstack's errors and
   old values, handlers with SA_ONSTACK on the stack and others not,
   nested delivery, EPERM while on it, SS_DISABLE, SS_AUTODISARM, the
   frame's XSAVE image on it, and a stack too small for a frame. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1U << 31)
#endif

enum { size = 64 * 1024 };
static char *alt;
static volatile int depth;
static uintptr_t outerLocal;

static void report(const char *what, int ret) { printf("%s: %d %s\n", what, ret, ret ? strerror(errno) : ""); }

static int onAlt(const void *p) { return (uintptr_t)p >= (uintptr_t)alt && (uintptr_t)p < (uintptr_t)alt + size; }

static void onUSR2(int sig, siginfo_t *si, void *ctx) {
	char local;
	printf("  nested: on the stack %d, below the outer handler %d\n", onAlt(&local), (uintptr_t)&local < outerLocal);
}

static void onUSR1(int sig, siginfo_t *si, void *ctx) {
	char local;
	ucontext_t *uc = ctx;
	stack_t cur, other = {.ss_sp = malloc(size), .ss_size = size};
	unsigned char *fp = (unsigned char *)uc->uc_mcontext.fpregs;
	uint32_t magic1;
	memcpy(&magic1, fp + 464, 4);
	printf("  handler on the stack: %d\n", onAlt(&local));
	printf("  frame's fpstate on the stack: %d, 64-byte aligned: %d, XSAVE image: %d\n", onAlt(fp),
	       (uintptr_t)fp % 64 == 0, magic1 == 0x46505853);
	printf("  uc_stack: sp is the stack %d, size %zu, flags %#x\n", uc->uc_stack.ss_sp == alt, uc->uc_stack.ss_size,
	       uc->uc_stack.ss_flags);
	sigaltstack(0, &cur);
	printf("  sigaltstack flags now: %#x\n", cur.ss_flags);
	report("  changing it", sigaltstack(&other, 0));
	outerLocal = (uintptr_t)&local;
	if (depth++ == 0)
		raise(SIGUSR2);
}

static void onPlain(int sig) {
	char local;
	printf("  plain handler on the stack: %d\n", onAlt(&local));
}

static void install(int sig, void (*fn)(int, siginfo_t *, void *), int flags) {
	struct sigaction sa = {0};
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | flags;
	sigaction(sig, &sa, 0);
}

int main(void) {
	stack_t ss, old;
	setvbuf(stdout, 0, _IONBF, 0);
	sigaltstack(0, &old);
	printf("initially: sp %p size %zu flags %#x\n", old.ss_sp, old.ss_size, old.ss_flags);
	alt = malloc(size);
	ss = (stack_t){.ss_sp = alt, .ss_size = 1024};
	report("1 KiB", sigaltstack(&ss, 0));
	ss = (stack_t){.ss_sp = alt, .ss_size = size, .ss_flags = 0x10};
	report("bad flags", sigaltstack(&ss, 0));
	ss = (stack_t){.ss_sp = alt, .ss_size = size};
	printf("set: %d\n", sigaltstack(&ss, &old));
	printf("old flags: %#x\n", old.ss_flags);
	sigaltstack(0, &old);
	printf("now: is ours %d size %zu flags %#x\n", old.ss_sp == alt, old.ss_size, old.ss_flags);

	install(SIGUSR1, onUSR1, SA_ONSTACK | SA_NODEFER);
	install(SIGUSR2, onUSR2, SA_ONSTACK);
	signal(SIGHUP, onPlain);
	printf("SIGUSR1 with SA_ONSTACK:\n");
	raise(SIGUSR1);
	printf("SIGHUP without:\n");
	raise(SIGHUP);

	ss.ss_flags = SS_DISABLE;
	printf("disable: %d\n", sigaltstack(&ss, 0));
	sigaltstack(0, &old);
	printf("now: sp %p size %zu flags %#x\n", old.ss_sp, old.ss_size, old.ss_flags);
	install(SIGUSR2, onUSR2, SA_ONSTACK);
	printf("SIGUSR2 with SA_ONSTACK, none set:\n");
	raise(SIGUSR2);

	ss = (stack_t){.ss_sp = alt, .ss_size = size, .ss_flags = SS_AUTODISARM};
	printf("autodisarm: %d\n", sigaltstack(&ss, 0));
	depth = 1;
	printf("SIGUSR1:\n");
	raise(SIGUSR1);
	sigaltstack(0, &old);
	printf("after: is ours %d flags %#x\n", old.ss_sp == alt, old.ss_flags);

	pid_t c = fork();
	if (c == 0) {
		ss = (stack_t){.ss_sp = alt, .ss_size = 2048};
		sigaltstack(&ss, 0);
		raise(SIGUSR2);
		_exit(0);
	}
	int status;
	waitpid(c, &status, 0);
	if (WIFSIGNALED(status))
		printf("a 2 KiB stack: killed by signal %d\n", WTERMSIG(status));
	else
		printf("a 2 KiB stack: handler ran\n");
	return 0;
}
