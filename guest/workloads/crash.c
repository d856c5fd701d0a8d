/*
 * crash: fault on purpose from CPL3, for the VMM's fault-report test. The
 * kernel prints "fault: #.. in thread N at rip=..." and calls HC_FAULT.
 *   kind=null    read address 0 (page 0 not present)     #PF vector 14, cr2=0
 *   kind=ud      ud1 (0F B9): an undefined opcode that is not the ud2 gate
 *                                                         #UD vector 6
 *   kind=div     divide by zero                           #DE vector 0
 *   kind=gp      hlt at CPL3                              #GP vector 13
 *   kind=kwrite  write to the kernel image (supervisor)   #PF vector 14
 *   kind=bp      int3 (offered to the VMM as HC_BREAKPOINT first; a VMM
 *                that does not handle it makes it a fault) #BP vector 3
 */
#include <reprise/ulib.h>

int wl_crash(const struct args *a)
{
	const char *kind = arg_str(a, "kind", "null");
	uint64_t p = 0;
	__asm__ volatile("" : "+r"(p));          /* hide the constant */
	if (!strcmp(kind, "null")) {
		truth("kind=null expect=#PF vector=14 cr2=0x0");
		(void)*(volatile int *)p;
	} else if (!strcmp(kind, "ud")) {
		truth("kind=ud expect=#UD vector=6");
		__asm__ volatile(".byte 0x0f, 0xb9, 0xc0");   /* ud1 %eax, %eax */
	} else if (!strcmp(kind, "div")) {
		truth("kind=div expect=#DE vector=0");
		uint32_t q = 1, r = 0;
		__asm__ volatile("divl %2" : "+a"(q), "+d"(r) : "r"((uint32_t)p));
		(void)q;
	} else if (!strcmp(kind, "gp")) {
		truth("kind=gp expect=#GP vector=13");
		__asm__ volatile("hlt");
	} else if (!strcmp(kind, "kwrite")) {
		truth("kind=kwrite expect=#PF vector=14 cr2=0x%x", REPRISE_KERNEL_BASE);
		*(volatile int *)(p + REPRISE_KERNEL_BASE) = 1;
	} else if (!strcmp(kind, "bp")) {
		truth("kind=bp expect=#BP vector=3");
		__asm__ volatile("int3");
	} else {
		printf("crash: unknown kind=%s (null|ud|div|gp|kwrite|bp)\n", kind);
		return 2;
	}
	truth("result=FAIL survived=1");
	return 1;
}
