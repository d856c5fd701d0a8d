// Prints what a program can see of its initial stack that depends neither
// on addresses nor on the host: the auxiliary vector's types in order and
// its fixed values, and where the strings, the platform string and
// AT_RANDOM's bytes lie below the stack's top. Run natively without
// address randomisation, with the argv, environment and path it gets under
// reprise, it prints the same.
#include <cpuid.h>
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef AT_MINSIGSTKSZ
#define AT_MINSIGSTKSZ 51
#endif
#ifndef AT_RSEQ_FEATURE_SIZE
#define AT_RSEQ_FEATURE_SIZE 27
#define AT_RSEQ_ALIGN 28
#endif

// minsigstksz is AT_MINSIGSTKSZ as Linux computes it, for a kernel that
// runs 32-bit programs too, on a CPU whose XSAVE image of the enabled
// components (CPUID 0xD.0 EBX) is b bytes: the i386 sigframe, 16-byte
// alignment, the image, FP_XSTATE_MAGIC2, the fsave header, 64-byte
// alignment, rounded up to 16.
static unsigned long minsigstksz(void) {
	unsigned a, b, c, d;
	__cpuid_count(0xd, 0, a, b, c, d);
	return (736 + 15 + b + 4 + 112 + 63 + 15) & ~15ul;
}

int main(int argc, char **argv, char **envp) {
	long *sp = (long *)argv - 1; // where argc was at entry
	char **e = envp;
	while (*e)
		e++;
	Elf64_auxv_t *auxv = (Elf64_auxv_t *)(e + 1), *a;
	printf("argc %ld = %d, sp %% 16 = %lu\n", *sp, argc, (unsigned long)((uintptr_t)sp % 16));
	printf("envp after argv: %d\n", envp == argv + argc + 1);

	// The vDSO (AT_SYSINFO_EHDR) and rseq's entries are Linux's alone:
	// reprise has neither. Values that are addresses or the host's
	// (AT_HWCAP, AT_HWCAP2) are left out; the addresses give the layout,
	// printed below.
	uintptr_t execfn = 0, platform = 0, random = 0, phdr = 0, entry = 0;
	for (a = auxv; a->a_type != AT_NULL; a++) {
		unsigned long t = a->a_type, v = a->a_un.a_val;
		if (t == AT_SYSINFO_EHDR || t == AT_RSEQ_FEATURE_SIZE || t == AT_RSEQ_ALIGN)
			continue;
		printf("auxv %lu", t);
		switch (t) {
		case AT_PAGESZ:
		case AT_PHENT:
		case AT_PHNUM:
		case AT_FLAGS:
		case AT_CLKTCK:
		case AT_SECURE:
			printf(" = %lu", v);
			break;
		case AT_UID:
			printf(" is getuid: %d", v == getuid());
			break;
		case AT_EUID:
			printf(" is geteuid: %d", v == geteuid());
			break;
		case AT_GID:
			printf(" is getgid: %d", v == getgid());
			break;
		case AT_EGID:
			printf(" is getegid: %d", v == getegid());
			break;
		case AT_BASE:
			printf(" (a loader: %d)", v != 0);
			break;
		case AT_MINSIGSTKSZ:
			printf(" is Linux's size for CPUID's XSAVE image: %d", v == minsigstksz());
			break;
		case AT_PHDR:
			phdr = v;
			break;
		case AT_ENTRY:
			entry = v;
			break;
		case AT_EXECFN:
			execfn = v;
			break;
		case AT_PLATFORM:
			platform = v;
			break;
		case AT_RANDOM:
			random = v;
			break;
		}
		printf("\n");
	}
	printf("entry - phdr = %ld\n", (long)(entry - phdr));
	if (!execfn || !platform || !random)
		return 1;

	// The top is the page boundary above the end marker after execfn.
	uintptr_t end = execfn + strlen((char *)execfn) + 1;
	uintptr_t top = (end + 4095) & ~(uintptr_t)4095;
	static const char zero[8];
	printf("execfn %s at top-%lu, end marker at top-%lu: zero %d\n", (char *)execfn,
	       (unsigned long)(top - execfn), (unsigned long)(top - end), memcmp((char *)end, zero, 8) == 0);
	for (int i = 0; envp[i]; i++)
		printf("env %d at top-%lu\n", i, (unsigned long)(top - (uintptr_t)envp[i]));
	for (int i = 0; i < argc; i++)
		printf("arg %d at top-%lu\n", i, (unsigned long)(top - (uintptr_t)argv[i]));
	printf("platform %s at top-%lu\n", (char *)platform, (unsigned long)(top - platform));
	printf("random at top-%lu\n", (unsigned long)(top - random));
	// What lies between auxv's end and the random bytes is alignment: it
	// does not change with the number of entries, each 16 bytes.
	printf("auxv end to random: %lu\n", (unsigned long)(random - (uintptr_t)(a + 1)));
	return 0;
}
