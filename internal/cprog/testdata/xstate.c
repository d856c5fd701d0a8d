/* Every thread of three processes keeps its own values in vector
   registers — zmm5, zmm21 and k3 where the CPU has AVX-512, ymm5 and
   ymm13 with AVX, xmm5 and xmm13 without — across system calls, thread
   and process switches (it spins between calls, so a live run preempts
   it anywhere), and signal handlers that clobber them. Each handler checks
   that its frame holds the interrupted values where Linux puts them (the
   XSAVE image, its software bytes and magic words) and writes a marker
   into the frame's xmm15, which rt_sigreturn must restore. The output is
   the same natively. */
#define _GNU_SOURCE
#include <cpuid.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

enum { sse, avx, avx512 };
static const char *names[] = {"sse", "avx", "avx512"};
static int level;
static unsigned offAVX, offOpmask, offZMMHi256, offHi16ZMM;

enum { threads = 3, processes = 3, calls = 200, spin = 100000 };

/* A thread's values: a = zmm5 (or ymm5, xmm5), b = zmm21 (or ymm13,
   xmm13), k = k3. */
struct vals {
	uint64_t a[8], b[8], k;
};
static __thread struct vals *mine;
static __thread long handled, badFrames;
static const uint64_t marker[2] = {0x0123456789abcdefull, 0xfedcba9876543210ull};

static void detect(void) {
	unsigned a, b, c, d;
	__cpuid_count(1, 0, a, b, c, d);
	if (!(c & (1u << 27)) || !(c & (1u << 28)))
		return;
	unsigned lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	if ((lo & 6) != 6)
		return;
	level = avx;
	__cpuid_count(0xd, 2, a, b, c, d);
	offAVX = b;
	__cpuid_count(7, 0, a, b, c, d);
	if (!(b & (1u << 16)) || (lo & 0xe6) != 0xe6)
		return;
	level = avx512;
	__cpuid_count(0xd, 5, a, b, c, d);
	offOpmask = b;
	__cpuid_count(0xd, 6, a, b, c, d);
	offZMMHi256 = b;
	__cpuid_count(0xd, 7, a, b, c, d);
	offHi16ZMM = b;
}

static void fill(struct vals *v, unsigned seed) {
	for (int i = 0; i < 8; i++) {
		v->a[i] = 0x0101010101010101ull * (seed + 1) + i;
		v->b[i] = ~v->a[i] ^ ((uint64_t)seed << 40);
	}
	v->k = 0xa5a5a5a5a5a5a5a5ull ^ seed;
}

/* The frame's copy of the interrupted registers, where Linux's XSAVE
   layout puts them. */
static int frameHolds(const unsigned char *fp, uint64_t bv) {
	const struct vals *v = mine;
	int regB = level == avx512 ? 21 : 13;
	if (level != avx512 && memcmp(fp + 160 + regB * 16, v->b, 16))
		return 0;
	if (memcmp(fp + 160 + 5 * 16, v->a, 16))
		return 0;
	if (level == sse)
		return 1;
	if (!(bv & 4) || memcmp(fp + offAVX + 5 * 16, &v->a[2], 16))
		return 0;
	if (level == avx)
		return memcmp(fp + offAVX + regB * 16, &v->b[2], 16) == 0;
	return (bv & 0xe0) == 0xe0 && !memcmp(fp + offZMMHi256 + 5 * 32, &v->a[4], 32) &&
	       !memcmp(fp + offHi16ZMM + (regB - 16) * 64, v->b, 64) && !memcmp(fp + offOpmask + 3 * 8, &v->k, 8);
}

__attribute__((target("avx512f"))) static void clobber512(void) {
	__asm__ volatile("vpxorq %%zmm5, %%zmm5, %%zmm5\n\tvpternlogd $0xff, %%zmm21, %%zmm21, %%zmm21\n\tkxorq %%k3, %%k3, %%k3"
			 ::: "xmm5", "xmm21", "k3");
}

__attribute__((target("avx"))) static void clobberAVX(void) {
	__asm__ volatile("vpxor %%ymm5, %%ymm5, %%ymm5\n\tvpcmpeqd %%ymm13, %%ymm13, %%ymm13" ::: "xmm5", "xmm13");
}

static void onSignal(int sig, siginfo_t *si, void *ctx) {
	ucontext_t *uc = ctx;
	unsigned char *fp = (unsigned char *)uc->uc_mcontext.fpregs;
	uint32_t magic1, size, magic2;
	uint64_t bv;
	memcpy(&magic1, fp + 464, 4);
	memcpy(&size, fp + 480, 4);
	memcpy(&magic2, fp + size, 4);
	memcpy(&bv, fp + 512, 8);
	handled++;
	if (!(uc->uc_flags & 1) || magic1 != 0x46505853 || magic2 != 0x46505845 || !frameHolds(fp, bv))
		badFrames++;
	if (level == avx512)
		clobber512();
	else if (level == avx)
		clobberAVX();
	__asm__ volatile("pxor %%xmm5, %%xmm5\n\tpxor %%xmm13, %%xmm13" ::: "xmm5", "xmm13");
	memcpy(fp + 160 + 15 * 16, marker, 16);
}

/* Each hold function loads the values, makes `calls` tgkill calls to the
   thread itself (each runs the handler) with a spin after each, and
   stores the registers and xmm15 back. */
#define LOOP                                                                                                           \
	"1:\n\tmov %[nr], %%eax\n\tsyscall\n\tmov %[spin], %%rcx\n2:\n\tdec %%rcx\n\tjnz 2b\n\tdec %%r12\n\tjnz 1b\n\t"
#define ARGS(v, out)                                                                                                   \
	:: [v] "r"(v), [out] "r"(out), [n] "r"((long)calls), [spin] "r"((long)spin), [nr] "i"(SYS_tgkill), "D"(getpid()),      \
	  "S"(gettid()), "d"(SIGUSR1)                                                                                  \
	: "rax", "rcx", "r11", "r12", "memory"

__attribute__((target("avx512f"))) static void hold512(struct vals *v, uint64_t *out) {
	__asm__ volatile("vmovdqu64 (%[v]), %%zmm5\n\tvmovdqu64 64(%[v]), %%zmm21\n\tkmovq 128(%[v]), %%k3\n\t"
			 "mov %[n], %%r12\n\t" LOOP
			 "vmovdqu64 %%zmm5, (%[out])\n\tvmovdqu64 %%zmm21, 64(%[out])\n\tkmovq %%k3, 128(%[out])\n\t"
			 "movdqu %%xmm15, 136(%[out])" ARGS(v, out), "xmm5", "xmm15", "xmm21", "k3");
}

__attribute__((target("avx"))) static void holdAVX(struct vals *v, uint64_t *out) {
	__asm__ volatile("vmovdqu (%[v]), %%ymm5\n\tvmovdqu 64(%[v]), %%ymm13\n\t"
			 "mov %[n], %%r12\n\t" LOOP
			 "vmovdqu %%ymm5, (%[out])\n\tvmovdqu %%ymm13, 64(%[out])\n\t"
			 "movdqu %%xmm15, 136(%[out])" ARGS(v, out), "xmm5", "xmm13", "xmm15");
}

static void holdSSE(struct vals *v, uint64_t *out) {
	__asm__ volatile("movdqu (%[v]), %%xmm5\n\tmovdqu 64(%[v]), %%xmm13\n\t"
			 "mov %[n], %%r12\n\t" LOOP
			 "movdqu %%xmm5, (%[out])\n\tmovdqu %%xmm13, 64(%[out])\n\t"
			 "movdqu %%xmm15, 136(%[out])" ARGS(v, out), "xmm5", "xmm13", "xmm15");
}

static void *run(void *arg) {
	struct vals v;
	uint64_t out[19] = {0};
	fill(&v, (unsigned)(long)arg);
	mine = &v;
	if (level == avx512)
		hold512(&v, out);
	else if (level == avx)
		holdAVX(&v, out);
	else
		holdSSE(&v, out);
	int words = level == avx512 ? 8 : level == avx ? 4 : 2;
	int kept = !memcmp(out, v.a, words * 8) && !memcmp(out + 8, v.b, words * 8) &&
		   (level != avx512 || out[16] == v.k) && !memcmp(out + 17, marker, 16);
	int framesOK = handled == calls && badFrames == 0;
	return (void *)(long)(kept | framesOK << 1);
}

/* Runs the process's threads; returns how many kept their registers,
   and in *frames how many saw good frames. */
static int process(int index, int *frames) {
	pthread_t t[threads];
	for (long i = 0; i < threads; i++) {
		int err = pthread_create(&t[i], 0, run, (void *)(index * threads + i + 1));
		if (err) {
			fprintf(stderr, "xstate: process %d: pthread_create: %s\n", index, strerror(err));
			_exit(100);
		}
	}
	int kept = 0;
	*frames = 0;
	for (int i = 0; i < threads; i++) {
		void *r;
		pthread_join(t[i], &r);
		kept += (long)r & 1;
		*frames += (long)r >> 1 & 1;
	}
	return kept;
}

int main(void) {
	detect();
	struct sigaction sa = {0};
	sa.sa_sigaction = onSignal;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, 0);
	pid_t child[processes - 1];
	for (int i = 0; i < processes - 1; i++) {
		child[i] = fork();
		if (child[i] == 0) {
			int frames, kept = process(i + 1, &frames);
			_exit(kept | frames << 4);
		}
	}
	int frames, kept = process(0, &frames);
	for (int i = 0; i < processes - 1; i++) {
		int status;
		waitpid(child[i], &status, 0);
		kept += WEXITSTATUS(status) & 15;
		frames += WEXITSTATUS(status) >> 4;
	}
	printf("level: %s\n", names[level]);
	printf("registers kept: %d of %d threads\n", kept, threads * processes);
	printf("signal frames as Linux lays them out: %d of %d threads\n", frames, threads * processes);
	return kept != threads * processes || frames != threads * processes;
}
