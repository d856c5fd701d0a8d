/*
 * Kernel entry, the 256 vector stubs, the trap paths and the idle loop.
 * Five common paths: #UD (system calls), the timer tick, the disk IRQ, the
 * NIC IRQ and everything else.
 *
 * Every trap builds a struct reprise_frame (abi.h) on the stack: the CPU
 * pushes ss, rsp, rflags, cs, rip (and an error code for some vectors), the
 * stub pushes a dummy error code where the CPU did not, then the vector
 * number, and the common path pushes the 15 general registers. The C
 * handler gets the frame and returns the frame to resume: a thread switch is
 * just returning another thread's frame (each thread's frame lives at the
 * top of its own kernel stack, see kernel.c).
 *
 * Built with REPRISE_COUNTER_R15 (the register-counter kit), r14 and r15
 * belong to the vCPU's branch counter, not to a thread: frames hold zeros
 * for them and no resume loads them, so the count runs on across thread
 * switches, and the VMM's placement of r15, which differs between a
 * recording and its replays, never reaches memory.
 */
#include <reprise/abi.h>

	.section .text.entry, "ax"
	.code64

/* ---- entry: CPL0, IF=0, rsp = REPRISE_BOOT_STACK_TOP, rdi = bootinfo */
	.globl reprise_kernel_entry
	.type reprise_kernel_entry, @function
reprise_kernel_entry:
	xorl %ebp, %ebp
	call kmain                  /* never returns: it resumes the first frame */
1:	cli
	hlt
	jmp 1b
	.size reprise_kernel_entry, . - reprise_kernel_entry

	.text

/* ---- vector stubs: vector v at reprise_vectors + 16*v, each exactly 16 bytes */
#define HAS_ERR(v) ((v) == 8 || (v) == 10 || (v) == 11 || (v) == 12 || (v) == 13 || \
		    (v) == 14 || (v) == 17 || (v) == 21 || (v) == 29 || (v) == 30)

.macro stub v, target
	.balign 16
1:
	.if !(HAS_ERR(\v))
	pushq $0                    /* dummy error code */
	.endif
	pushq $\v                   /* imm8 below 128, else imm32 (positive) */
	jmp \target
	.fill REPRISE_VECTOR_STUB_SIZE - (. - 1b), 1, 0xcc
.endm

	.balign 16
	.globl reprise_vectors
	.type reprise_vectors, @function
reprise_vectors:
	.set vec, 0
	.rept 256
	.if vec == 6
	stub vec, trap_ud
	.elseif vec == REPRISE_IRQ_BASE + REPRISE_IRQ_TIMER
	stub vec, trap_tick
	.elseif vec == REPRISE_IRQ_BASE + REPRISE_IRQ_DISK
	stub vec, trap_disk
	.elseif vec == REPRISE_IRQ_BASE + REPRISE_IRQ_NIC
	stub vec, trap_nic
	.else
	stub vec, trap_other
	.endif
	.set vec, vec + 1
	.endr
	.size reprise_vectors, . - reprise_vectors

/* ---- common paths: save registers, call the C handler, resume its frame */
.macro save_regs
	pushq %rax
	pushq %rbx
	pushq %rcx
	pushq %rdx
	pushq %rsi
	pushq %rdi
	pushq %rbp
	pushq %r8
	pushq %r9
	pushq %r10
	pushq %r11
	pushq %r12
	pushq %r13
#ifdef REPRISE_COUNTER_R15
	pushq $0
	pushq $0
#else
	pushq %r14
	pushq %r15
#endif
.endm

	.globl trap_ud
	.type trap_ud, @function
trap_ud:                            /* #UD: the ud2 system-call gate */
	save_regs
	movq %rsp, %rdi
	call reprise_trap_ud
	jmp reprise_resume_rax
	.size trap_ud, . - trap_ud

	.globl trap_tick
	.type trap_tick, @function
trap_tick:                          /* vector 0x20: timer tick */
	save_regs
	movq %rsp, %rdi
	call reprise_trap_tick
	jmp reprise_resume_rax
	.size trap_tick, . - trap_tick

	.globl trap_disk
	.type trap_disk, @function
trap_disk:                          /* vector 0x22: a disk request completed */
	save_regs
	movq %rsp, %rdi
	call reprise_trap_disk
	jmp reprise_resume_rax
	.size trap_disk, . - trap_disk

	.globl trap_nic
	.type trap_nic, @function
trap_nic:                           /* vector 0x23: received frames were delivered */
	save_regs
	movq %rsp, %rdi
	call reprise_trap_nic
	jmp reprise_resume_rax
	.size trap_nic, . - trap_nic

	.globl trap_other
	.type trap_other, @function
trap_other:                         /* exceptions, other IRQs */
	save_regs
	movq %rsp, %rdi
	call reprise_trap_other
	/* fall through */
	.size trap_other, . - trap_other

	.globl reprise_resume_rax
	.type reprise_resume_rax, @function
reprise_resume_rax:                 /* rax = frame to resume */
	movq %rax, %rsp
#ifdef REPRISE_COUNTER_R15
	addq $16, %rsp              /* r15, r14: the counter's */
#else
	popq %r15
	popq %r14
#endif
	popq %r13
	popq %r12
	popq %r11
	popq %r10
	popq %r9
	popq %r8
	popq %rbp
	popq %rdi
	popq %rsi
	popq %rdx
	popq %rcx
	popq %rbx
	popq %rax
	addq $16, %rsp              /* vector, error */
	iretq
	.size reprise_resume_rax, . - reprise_resume_rax

/* void reprise_resume(struct reprise_frame *f): enter a frame (boot only) */
	.globl reprise_resume
	.type reprise_resume, @function
reprise_resume:
	movq %rdi, %rax
	jmp reprise_resume_rax
	.size reprise_resume, . - reprise_resume

/* ---- the idle thread: CPL0, its own stack; interrupts only arrive here
 * (and in CPL3 code). sti's one-instruction shadow keeps the tick from
 * landing between sti and hlt. */
	.globl reprise_idle
	.type reprise_idle, @function
reprise_idle:
	sti
	hlt
	jmp reprise_idle
	.size reprise_idle, . - reprise_idle

	.section .note.GNU-stack, "", @progbits
