/* User-side entry points the kernel starts threads at, and the heap. */
#include <reprise/ulib.h>

/* Filled by the kernel before the main thread starts (the boot-info page
 * itself is supervisor-only). */
struct reprise_bootinfo reprise_uboot;

static volatile uint64_t heap_cur, heap_end;

/* A thread's first frame has no caller: where the compiler emits call
 * frame information (the r15 kit's -g build), say so, as glibc's clone
 * does, and a debugger's backtrace ends here. */
#ifdef __GCC_HAVE_DWARF2_CFI_ASM
#define OUTERMOST() __asm__(".cfi_undefined rip")
#else
#define OUTERMOST() ((void)0)
#endif

int reprise_main(const struct reprise_bootinfo *bi);
__attribute__((noreturn)) void reprise_user_start(const struct reprise_bootinfo *bi,
						  uint64_t heap, uint64_t hend);
__attribute__((noreturn)) void reprise_thread_entry(thread_fn fn, void *arg);

/* The main thread (tid 1): rdi = &reprise_uboot, rsi/rdx = free user RAM. */
void reprise_user_start(const struct reprise_bootinfo *bi, uint64_t heap, uint64_t hend)
{
	OUTERMOST();
	heap_cur = (heap + 15) & ~15ULL;
	heap_end = hend;
	sys_exit(reprise_main(bi));
}

/* Every other thread: SYS_THREAD_CREATE(fn, arg) starts here. */
void reprise_thread_entry(thread_fn fn, void *arg)
{
	OUTERMOST();
	thread_exit(fn(arg));
}

void *ualloc(size_t n)
{
	uint64_t sz = (n + 15) & ~15ULL;
	uint64_t p = atomic_add64(&heap_cur, sz);
	if (p + sz > heap_end || p + sz < p)
		return 0;
	return (void *)p;
}
